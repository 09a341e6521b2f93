#include "cli/plan_json.h"

namespace trident {

nlohmann::json EvaluationJson(const Plan& plan, const Evaluation& ev,
                              const ReportContext& context) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& st = plan.stages[s];
    stages.push_back({{"first_layer", st.first_layer},
                      {"num_layers", st.num_layers},
                      {"replicas", st.replicas},
                      {"recompute", NameOf(RecomputeModeNames(), st.recompute)},
                      {"time_ms", ev.stage_ms[s]},
                      {"memory_bytes", ev.memory[s % plan.mesh.pp].Total()}});
  }
  double seconds = ev.step_ms * 1e-3;
  nlohmann::json out = {
      {"config", ConfigLine(plan)},
      {"mesh",
       {{"dp", plan.mesh.dp}, {"pp", plan.mesh.pp}, {"cp", plan.mesh.cp}, {"tp", plan.mesh.tp}}},
      {"schedule", NameOf(ScheduleKindNames(), plan.schedule)},
      {"virtual_stages", plan.virtual_stages},
      {"micro_batch_size", plan.micro_batch_size},
      {"num_micro_batches", plan.num_micro_batches},
      {"dp_sharding", NameOf(DpShardingNames(), plan.dp_sharding)},
      {"dp_shard", plan.dp_shard > 0 ? plan.dp_shard : plan.mesh.dp},
      {"sequence_parallel", plan.sequence_parallel},
      {"stages", stages},
      {"step_time_ms", ev.step_ms},
      {"tokens_per_s", static_cast<double>(plan.global_batch * plan.seq_len) / seconds},
      {"bubble_fraction", ev.bubble_fraction},
      {"compute_ms", ev.busy_ms},
      {"bubble_ms", ev.bubble_ms},
      {"exposed_sync_ms", ev.exposed_sync_ms},
      {"optimizer_ms", ev.optimizer_ms},
      {"param_gather_ms", ev.param_gather_ms},
      {"grad_scatter_ms", ev.grad_scatter_ms},
      {"layer_comm_ms", ev.layer_comm_ms},
      {"bottleneck_stage", ev.bottleneck_stage},
      {"peak_memory_bytes", ev.peak_memory_bytes},
      {"memory_limit_bytes", ev.memory_limit_bytes}};
  if (context.model_flops_per_step > 0 && context.peak_flops_per_device > 0) {
    double per_device = context.model_flops_per_step / seconds / plan.devices;
    out["achieved_tflops_per_device"] = per_device / 1e12;
    out["fraction_of_peak"] = per_device / context.peak_flops_per_device;
  }
  return out;
}

nlohmann::json SearchJson(const SearchResult& result, const ReportContext& context,
                          const std::string& plan_path) {
  const Candidate& best = result.ranked.front();
  nlohmann::json runners = nlohmann::json::array();
  for (size_t i = 1; i < result.ranked.size(); ++i) {
    const Candidate& c = result.ranked[i];
    nlohmann::json entry = EvaluationJson(c.plan, c.evaluation, context);
    entry["why_lost"] = WhyLost(best.evaluation, c.evaluation);
    runners.push_back(entry);
  }
  return {{"plan_file", plan_path},
          {"best", EvaluationJson(best.plan, best.evaluation, context)},
          {"runners_up", runners},
          {"configurations", result.configurations},
          {"infeasible", result.infeasible},
          {"exact_branches", result.exact_branches},
          {"exact_simulated", result.exact_simulated}};
}

}  // namespace trident
