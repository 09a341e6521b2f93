#include "cli/evaluated_plan.h"

#include <filesystem>

#include "planner/plan_inputs.h"

namespace trident {

namespace {

// --cluster, or configs/clusters/<plan's cluster>.yaml when it exists.
Status ResolveCluster(const Plan& plan, const std::string& source, CostOptions* options) {
  if (!options->cluster.empty()) return Status::Ok();
  std::string guess = "configs/clusters/" + plan.cluster + ".yaml";
  if (!std::filesystem::exists(guess)) {
    return InvalidArgument(source + " names cluster '" + plan.cluster + "' but " + guess +
                           " does not exist; pass --cluster FILE");
  }
  options->cluster = guess;
  return Status::Ok();
}

}  // namespace

StatusOr<EvaluatedPlan> LoadAndEvaluate(const std::string& plan_path, CostOptions options,
                                        double max_memory_gib) {
  TRIDENT_ASSIGN_OR_RETURN(Plan plan, LoadPlan(plan_path));
  return Evaluate(std::move(plan), plan_path, std::move(options), max_memory_gib);
}

StatusOr<EvaluatedPlan> Evaluate(Plan plan, const std::string& source, CostOptions options,
                                 double max_memory_gib, PipelineTransfers transfers) {
  TRIDENT_RETURN_IF_ERROR(CheckMaxMemory(max_memory_gib));
  EvaluatedPlan out;
  out.plan = std::move(plan);
  TRIDENT_RETURN_IF_ERROR(ResolveCluster(out.plan, source, &options));
  TRIDENT_ASSIGN_OR_RETURN(out.inputs, LoadCostInputs(options, out.plan.model, out.plan.seq_len,
                                                      out.plan.dtype, out.plan.mesh.cp));
  EvaluateOptions evaluate;
  evaluate.memory_limit_bytes = MaxMemoryBytes(max_memory_gib);
  evaluate.pipeline_transfers = transfers;
  TRIDENT_ASSIGN_OR_RETURN(out.evaluation, EvaluatePlan(*out.inputs->costs, out.plan, evaluate));
  return out;
}

}  // namespace trident
