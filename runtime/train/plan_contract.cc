#include "runtime/train/plan_contract.h"

#include "runtime/train/job_layout.h"

namespace trident {
namespace {

constexpr FieldRole kExecuted = FieldRole::kExecuted;
constexpr FieldRole kRestricted = FieldRole::kRestricted;
constexpr FieldRole kInformational = FieldRole::kInformational;

std::string Str(int64_t value) { return std::to_string(value); }

// The fields that need no layout: the model's layers, dropout, dtype and zero1.
void CheckFields(const Plan& plan, std::vector<FieldError>* out) {
  if (Status trainable = CheckTrainableModel(plan.model); !trainable.ok()) {
    out->push_back({"model.layers[].kind", trainable.message(), ""});
  }
  if (plan.model.dropout != 0) {
    out->push_back({"model.dropout",
                    "dropout " + std::to_string(plan.model.dropout) +
                        " is not implemented by the layers (they train without dropout)",
                    "set dropout: 0 in the model and plan again"});
  }
  if (plan.dtype != DType::kFp32) {
    out->push_back({"dtype",
                    DTypeName(plan.dtype) + " training is not implemented by the runtime (it "
                                            "trains in fp32)",
                    "plan again with --dtype fp32"});
  }
  if (plan.zero1) {
    out->push_back({"zero1",
                    "optimizer-state sharding (ZeRO-1) is not implemented by the runtime: every "
                    "replica would keep the whole optimizer state, more memory than planned",
                    "plan again with --zero1 off"});
  }
}

}  // namespace

const std::vector<PlanFieldUse>& PlanFieldUses() {
  static const std::vector<PlanFieldUse> uses = {
      {"format_version", kInformational, "the loader's; every version it reads runs alike"},
      {"kind", kInformational, "the loader's: the file is a plan"},
      {"model.name", kExecuted, "checkpoints record it; --load refuses another model's"},
      {"model.vocab_size", kExecuted, "embedding and lm_head rows; the data's tokens stay below"},
      {"model.max_seq_len", kExecuted, "learned position rows; the longest sequence"},
      {"model.hidden", kExecuted, "every layer's width"},
      {"model.heads", kExecuted, "attention heads, split over tp"},
      {"model.kv_heads", kExecuted, "grouped-query key and value heads, split over tp"},
      {"model.ffn_hidden", kExecuted, "the MLP's inner width, split over tp"},
      {"model.norm", kExecuted, "LayerNorm or RMSNorm"},
      {"model.positions", kExecuted, "learned positions or RoPE"},
      {"model.tied_embeddings", kExecuted, "one table for embedding and lm_head"},
      {"model.dropout", kRestricted, "0 only: the layers have no dropout"},
      {"model.norm_eps", kExecuted, "the norms' epsilon"},
      {"model.rope_theta", kExecuted, "RoPE's base"},
      {"model.dtype", kInformational, "the preset's dtype; the plan's dtype is what trains"},
      {"model.layers[].kind", kRestricted,
       "the layers built; generic layers have no implementation, and a trained model starts "
       "with an embedding and ends with an lm_head"},
      {"model.layers[].repeat", kExecuted, "how many layers of the kind"},
      {"cluster", kInformational, "the cluster the plan was made for"},
      {"devices", kExecuted, "the job's ranks (mpirun -np)"},
      {"devices_per_node", kExecuted, "trident launch puts a whole node's ranks on one host"},
      {"mesh.dp", kExecuted, "replicas of the largest position"},
      {"mesh.pp", kExecuted, "pipeline positions"},
      {"mesh.tp", kExecuted, "tensor-parallel ranks of every stage"},
      {"virtual_stages", kRestricted, "interleaved 1F1B's stages per position; CPU (MPI) only"},
      {"micro_batch_size", kExecuted, "sequences per micro-batch"},
      {"num_micro_batches", kExecuted, "micro-batches per step, round robin over replicas"},
      {"global_batch", kExecuted, "sequences per step: the loss is their mean"},
      {"seq_len", kExecuted, "tokens per sequence"},
      {"dtype", kRestricted, "fp32 only: the runtime trains in fp32"},
      {"schedule", kExecuted, "each rank's list of forward and backward actions"},
      {"zero1", kRestricted, "false only: every replica keeps the whole optimizer state"},
      {"stages[].first_layer", kExecuted, "the stage's first layer"},
      {"stages[].num_layers", kExecuted, "the stage's layers"},
      {"stages[].replicas", kRestricted,
       "ranks of the stage, micro-batches round robin; a layout that would deadlock is refused"},
      {"stages[].recompute", kExecuted, "what the stage's layers stash for backward"},
      {"stages[].predicted_time_ms", kInformational, "set beside the measured times"},
      {"stages[].predicted_memory_bytes", kInformational, "set beside the measured peak"},
      {"predicted.step_time_ms", kInformational, "summary.json sets it beside the measured step"},
      {"predicted.tokens_per_s", kInformational, "summary.json sets it beside the measured"},
      {"predicted.bubble_fraction", kInformational, "the planner's estimate"},
      {"predicted.peak_memory_bytes", kInformational, "summary.json sets it beside the measured"},
      {"provenance.planner_version", kInformational, "which planner wrote the plan"},
      {"provenance.profile_digest", kInformational, "the profile the plan was made from"},
      {"provenance.cluster_digest", kInformational, "the cluster file the plan was made from"},
  };
  return uses;
}

RuntimeBackend BackendForDevice(std::string_view device) {
  return {.device = std::string(device), .in_order_transfers = device == "cuda"};
}

// NCCL matches a pair's transfers by order and runs one stream per communicator: interleaved
// ranks exchange in both directions within one group of transfers, whose shared completion
// can wait on itself.
FieldCheck CheckLayoutOnBackend(const JobLayout& layout, const RuntimeBackend& backend) {
  if (!backend.in_order_transfers) return std::nullopt;
  const Plan& plan = layout.plan();
  if (plan.virtual_stages > 1) {
    return FieldError{"virtual_stages",
                      "interleaved 1F1B (virtual_stages " + Str(plan.virtual_stages) +
                          ") does not run on the NCCL backend yet",
                      "plan with another schedule (trident plan --schedule 1f1b,zb_h1,gpipe) or "
                      "train with --device cpu"};
  }
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
