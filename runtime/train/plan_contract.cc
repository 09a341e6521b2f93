#include "runtime/train/plan_contract.h"

#include "core/yaml_io.h"
#include "runtime/train/job_layout.h"

namespace trident {
namespace {

// The runtime shards the optimizer state, the gradients and the parameters
// (runtime/train/dp_shard.h), but not under PipeDream, whose replicas update on their own.
void CheckSharding(const Plan& plan, std::vector<FieldError>* out) {
  if (plan.dp_sharding != DpSharding::kNone && plan.schedule == ScheduleKind::kPipeDream) {
    const std::string& level = NameOf(DpShardingNames(), plan.dp_sharding);
    out->push_back({"dp_sharding",
                    level + " sharding is not implemented for pipedream, whose replicas update "
                            "after every backward",
                    "plan again with --dp-sharding none or another schedule"});
  }
}

// fp32 and bf16 (Megatron's bf16 mode: runtime/train/optimizer.h) run; fp16 would need loss
// scaling, which the runtime does not have.
void CheckDtype(const Plan& plan, std::vector<FieldError>* out) {
  if (plan.dtype != DType::kFp16) return;
  out->push_back({"dtype", "fp16 training (with loss scaling) is not implemented by the runtime",
                  "plan again with --dtype bf16 or --dtype fp32"});
}

// The fields that need no layout: the model's layers, dropout, dtype and dp_sharding.
void CheckFields(const Plan& plan, std::vector<FieldError>* out) {
  if (Status trainable = CheckTrainableModel(plan.model); !trainable.ok()) {
    out->push_back({"model.layers[].kind", trainable.message(), ""});
  }
  if (plan.model.attention != AttentionKind::kUnfused) {
    out->push_back({"model.attention",
                    "flash attention is not implemented by the layers (they compute attention "
                    "unfused, keeping the softmax output)",
                    "set attention: unfused in the model and plan again, or export the plan "
                    "(trident export --to megatron|torchtitan)"});
  }
  if (plan.model.dropout != 0) {
    out->push_back({"model.dropout",
                    "dropout " + FormatDouble(plan.model.dropout) +
                        " is not implemented by the layers (they train without dropout)",
                    "set dropout: 0 in the model and plan again"});
  }
  CheckDtype(plan, out);
  CheckSharding(plan, out);
}

}  // namespace

RuntimeBackend BackendForDevice(std::string_view device) {
  return {.device = std::string(device), .in_order_transfers = device == "cuda"};
}

// NCCL matches a channel's transfers by order (each on a link of its own: pipeline_links.h).
FieldCheck CheckLayoutOnBackend(const JobLayout& layout, const RuntimeBackend& backend) {
  if (!backend.in_order_transfers) return std::nullopt;
  if (Status in_order = layout.CheckInOrderTransfers(); !in_order.ok()) {
    return FieldError{"schedule", in_order.message(), ""};
  }
  return std::nullopt;
}

std::vector<FieldError> CheckPlanContract(const Plan& plan, const RuntimeBackend& backend) {
  if (FieldCheck invalid = plan.Check()) return {*invalid};
  std::vector<FieldError> out;
  CheckFields(plan, &out);
  if (!out.empty()) return out;
  // PipeDream's lanes repeat each step; two steps show any wait that crosses a step boundary.
  const int steps = plan.schedule == ScheduleKind::kPipeDream ? 2 : 1;
  StatusOr<JobLayout> layout = JobLayout::Create(plan, steps);
  if (!layout.ok()) return {{"schedule", layout.status().message(), ""}};
  if (Status deadlock = layout->CheckNoDeadlock(); !deadlock.ok()) {
    return {{"stages[].replicas", deadlock.message(), "give the positions other replica counts"}};
  }
  if (FieldCheck on_backend = CheckLayoutOnBackend(*layout, backend)) return {*on_backend};
  return {};
}

Status PlanContractStatus(const Plan& plan, const std::string& plan_path,
                          const RuntimeBackend& backend) {
  std::vector<FieldError> refused = CheckPlanContract(plan, backend);
  if (refused.empty()) return Status::Ok();
  std::string message =
      plan_path + ": the " + backend.device + " runtime cannot run this plan as written:";
  for (const FieldError& e : refused) message += "\n  " + FormatFieldError(e);
  return InvalidArgument(message);
}

}  // namespace trident
