// `trident import megatron`'s communication-overlap flags: Megatron-LM's rules for them, and
// where they make Megatron-LM overlap more or less than Trident's cost model assumes. The facts
// of Megatron-LM are those megatron_fields.cc cites; Trident's assumptions are planner/README.md's
// (EvaluatePlan, sharding_comm.h).
#include "launcher/megatron_import.h"

namespace trident {
namespace {

using Has = std::function<bool(const std::string&)>;

// The combinations Megatron-LM's validate_args refuses.
Status CheckOverlap(const Has& has, const Plan& plan, const std::string& file) {
  auto error = [&](const std::string& flag, const std::string& what) {
    return InvalidArgument(file + ": " + flag + ": " + what);
  };
  if (has("--overlap-param-gather")) {
    if (!has("--use-distributed-optimizer") && !has("--use-megatron-fsdp"))
      return error("--overlap-param-gather",
                   "Megatron-LM allows it only with --use-distributed-optimizer or "
                   "--use-megatron-fsdp");
    if (!has("--overlap-grad-reduce"))
      return error("--overlap-param-gather", "Megatron-LM requires --overlap-grad-reduce with it");
  }
  if (has("--tp-comm-overlap") && !plan.sequence_parallel)
    return error("--tp-comm-overlap",
                 "Megatron-LM requires --sequence-parallel with it (and tp above 1, where it "
                 "turns sequence parallelism off)");
  if (has("--no-overlap-p2p-communication") && plan.virtual_stages > 1 && plan.mesh.pp <= 2)
    return error("--no-overlap-p2p-communication",
                 "Megatron-LM asks pp above 2 for the interleaved schedule without p2p overlap");
  return Status::Ok();
}

// Megatron-LM's bucketed reduction inside the last backward, against Trident's after it.
std::string GradReduceNote(const Plan& plan, bool aligned) {
  std::string where = "every pipeline stage's gradients in buckets during its last backward";
  if (plan.mesh.pp == 1) where = "the gradients in buckets during the last backward";
  if (plan.mesh.pp > 1 && aligned) {
    where =
        "the first pipeline stage's gradients in buckets during its last backward (the other "
        "stages' after theirs, as Trident does)";
  }
  return "--overlap-grad-reduce: Megatron-LM reduces " + where +
         "; Trident costs the reduction after the backward, so it predicts up to that reduction "
         "more a step than Megatron-LM takes";
}

// The data-parallel gradient reduction and parameter all-gather, by sharding level.
void DataParallelNotes(const Has& has, const Plan& plan, std::vector<std::string>* notes) {
  const DpSharding level = plan.dp_sharding;
  const bool fsdp = level == DpSharding::kGradients || level == DpSharding::kFull;
  if (has("--overlap-grad-reduce") && !fsdp)
    notes->push_back(GradReduceNote(plan, !has("--no-align-grad-reduce")));
  if (!has("--overlap-grad-reduce") && fsdp)
    notes->push_back(
        "no --overlap-grad-reduce: Megatron FSDP reduce-scatters the gradients without "
        "overlapping the compute; Trident costs each micro-batch's reduce-scatter beside the next "
        "one's compute, so Megatron-LM will take longer than predicted");
  if (has("--overlap-param-gather") &&
      (level == DpSharding::kOptimizer || level == DpSharding::kGradients))
    notes->push_back(
        "--overlap-param-gather: Megatron-LM all-gathers the updated parameters during the next "
        "forward; Trident costs the all-gather after the optimizer step, never hidden, so it "
        "predicts up to that all-gather more a step than Megatron-LM takes");
  if (!has("--overlap-param-gather") && level == DpSharding::kFull)
    notes->push_back(
        "no --overlap-param-gather: Megatron FSDP gathers each layer's parameters when it is "
        "needed; Trident costs the all-gathers prefetched a layer ahead, so Megatron-LM will "
        "take longer than predicted");
}

}  // namespace

StatusOr<std::vector<std::string>> MegatronOverlapNotes(const Has& has, const Plan& plan,
                                                        const std::string& file) {
  TRIDENT_RETURN_IF_ERROR(CheckOverlap(has, plan, file));
  std::vector<std::string> notes;
  if (plan.mesh.dp * plan.mesh.cp > 1) DataParallelNotes(has, plan, &notes);
  if (has("--tp-comm-overlap"))
    notes.push_back(
        "--tp-comm-overlap: Megatron-LM overlaps the tensor-parallel collectives with the GEMMs; "
        "Trident costs them on the critical path, so it predicts more a step than Megatron-LM "
        "takes");
  if (has("--no-overlap-p2p-communication") && plan.virtual_stages > 1)
    notes.push_back(
        "--no-overlap-p2p-communication: Megatron-LM batches each step's pipeline sends and "
        "receives and waits for them; Trident costs the transfers as asynchronous (delaying "
        "only the receiver), so Megatron-LM may take longer than predicted");
  return notes;
}

}  // namespace trident
