#include "planner/report.h"

#include <algorithm>
#include <cstdio>

#include "core/replica_lanes.h"
#include "core/text_format.h"

namespace trident {
namespace {

std::string GiB(int64_t bytes) { return FormatBytes(static_cast<double>(bytes)); }

// "178.2 TFLOP/s", or GFLOP/s below one TFLOP/s.
std::string FlopRate(double flops_per_s) {
  if (flops_per_s < 1e12) return FormatFixed(flops_per_s / 1e9, 2) + " GFLOP/s";
  return FormatFixed(flops_per_s / 1e12, 1) + " TFLOP/s";
}

std::string Pad(std::string text, size_t width, bool right) {
  if (text.size() >= width) return text;
  std::string pad(width - text.size(), ' ');
  return right ? pad + text : text + pad;
}

std::string StageTable(const Plan& plan, const Evaluation& ev) {
  std::string text = "  stage  layers      replicas  recompute   time/micro-batch  memory/rank\n";
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& st = plan.stages[s];
    std::string layers =
        std::to_string(st.first_layer) + "-" + std::to_string(st.first_layer + st.num_layers - 1);
    text += "  " + Pad(std::to_string(s), 5, true) + "  " + Pad(layers, 10, false) + "  " +
            Pad(std::to_string(st.replicas), 8, true) + "  " +
            Pad(NameOf(RecomputeModeNames(), st.recompute), 10, false) + "  " +
            Pad(FormatMs(ev.stage_ms[s]), 16, true) + "  " +
            Pad(GiB(ev.memory[s % plan.mesh.pp].Total()), 11, true) +
            (static_cast<int>(s) == ev.bottleneck_stage ? "  <- bottleneck" : "") + "\n";
  }
  return text;
}

// Round robin (core/replica_lanes.h) gives a stage on r replicas floor(M / r) or ceil(M / r)
// micro-batches per replica: "96", or the range over the stages, "18-19".
std::string MicroBatchesPerReplica(const Plan& plan) {
  const int m = plan.num_micro_batches;
  int fewest = m, most = 0;
  for (const PlanStage& st : plan.stages) {
    fewest = std::min(fewest, LaneMicroBatches(m, st.replicas, st.replicas - 1));
    most = std::max(most, LaneMicroBatches(m, st.replicas, 0));
  }
  if (fewest == most) return std::to_string(most);
  return std::to_string(fewest) + "-" + std::to_string(most);
}

}  // namespace

std::string ConfigLine(const Plan& plan) {
  std::string text = "tp " + std::to_string(plan.mesh.tp) +
                     (plan.sequence_parallel ? " (sequence parallel)" : "") +
                     (plan.mesh.cp > 1 ? " × cp " + std::to_string(plan.mesh.cp) : "") + " × pp " +
                     std::to_string(plan.mesh.pp) + " × dp " + std::to_string(plan.mesh.dp) + ", " +
                     NameOf(ScheduleKindNames(), plan.schedule);
  if (plan.virtual_stages > 1) text += " (v " + std::to_string(plan.virtual_stages) + ")";
  text += ", micro-batch " + std::to_string(plan.micro_batch_size) + " × " +
          MicroBatchesPerReplica(plan) + " per replica, recompute ";
  text += !UniformRecompute(plan.stages)
              ? "per stage"
              : NameOf(RecomputeModeNames(), plan.stages.front().recompute);
  if (!UniformReplication(plan.stages)) text += ", per-stage replication";
  return text + plan.ShardingText();
}

std::string StepBreakdown(const Plan& plan, const Evaluation& ev) {
  auto pct = [&ev](double ms) { return FormatFixed(100 * ms / ev.step_ms, 1) + "%"; };
  std::string text = "step " + FormatMs(ev.step_ms) + " = compute " + FormatMs(ev.busy_ms) + " (" +
                     pct(ev.busy_ms) + ") + waiting on the busiest lane " + FormatMs(ev.bubble_ms) +
                     " (" + pct(ev.bubble_ms) + ") + exposed gradient sync " +
                     FormatMs(ev.exposed_sync_ms) + " (" + pct(ev.exposed_sync_ms) +
                     ") + optimizer " + FormatMs(ev.optimizer_ms) + " (" + pct(ev.optimizer_ms) +
                     ")";
  auto term = [&](const char* name, double ms) {
    if (ms > 0) text += std::string(" + ") + name + " " + FormatMs(ms) + " (" + pct(ms) + ")";
  };
  term("parameter all-gather after the step", ev.param_gather_ms);
  term("per-micro-batch gradient reduce-scatter", ev.grad_scatter_ms);
  term("per-micro-batch layer gathers and scatters", ev.layer_comm_ms);
  text += "\n";
  const PlanStage& b = plan.stages[ev.bottleneck_stage];
  text += "bottleneck: stage " + std::to_string(ev.bottleneck_stage) + " (layers " +
          std::to_string(b.first_layer) + "-" + std::to_string(b.first_layer + b.num_layers - 1) +
          "), " + FormatMs(ev.stage_ms[ev.bottleneck_stage]) + " per micro-batch\n";
  return text;
}

std::string PlanSummary(const Plan& plan, const Evaluation& ev, const ReportContext& context) {
  std::string text = plan.model.name + " on " + std::to_string(plan.devices) + " devices (" +
                     plan.cluster + "): " + ConfigLine(plan) + "\n\n" + StageTable(plan, ev) + "\n";
  double tokens_per_s = static_cast<double>(plan.global_batch * plan.seq_len) / (ev.step_ms * 1e-3);
  text += "predicted step time   " + FormatMs(ev.step_ms) + " (global batch " +
          std::to_string(plan.global_batch) + " × seq " + std::to_string(plan.seq_len) + ")\n";
  // A generic (imported) model's sequence is one sample of length 1.
  text += "throughput            " + FormatFixed(tokens_per_s, 0) +
          (plan.model.IsGeneric() ? " samples/s\n" : " tokens/s\n");
  if (context.model_flops_per_step > 0 && context.peak_flops_per_device > 0) {
    double per_device = context.model_flops_per_step / (ev.step_ms * 1e-3) / plan.devices;
    text += "achieved per device   " + FlopRate(per_device) + " (" +
            FormatFixed(100 * per_device / context.peak_flops_per_device, 1) + "% of peak)\n";
  }
  text += "pipeline idle         " + FormatFixed(100 * ev.bubble_fraction, 1) +
          "% (all lanes of the simulated schedule)\n";
  text += "peak memory           " + GiB(ev.peak_memory_bytes) + " of " +
          GiB(ev.memory_limit_bytes) + " (headroom " +
          GiB(ev.memory_limit_bytes - ev.peak_memory_bytes) + ")\n";
  return text + StepBreakdown(plan, ev);
}

std::string WhyLost(const Evaluation& best, const Evaluation& other) {
  struct Part {
    const char* name;
    double best_ms, other_ms;
  };
  const Part parts[] = {{"compute", best.busy_ms, other.busy_ms},
                        {"bubble", best.bubble_ms, other.bubble_ms},
                        {"exposed sync", best.exposed_sync_ms, other.exposed_sync_ms},
                        {"optimizer", best.optimizer_ms, other.optimizer_ms},
                        {"parameter all-gather", best.param_gather_ms, other.param_gather_ms},
                        {"gradient reduce-scatter", best.grad_scatter_ms, other.grad_scatter_ms},
                        {"layer gathers", best.layer_comm_ms, other.layer_comm_ms}};
  const Part* worst = &parts[0];
  for (const Part& p : parts) {
    if (p.other_ms - p.best_ms > worst->other_ms - worst->best_ms) worst = &p;
  }
  double slower = 100 * (other.step_ms / best.step_ms - 1);
  if (slower < 0.05) {
    return "as fast; more memory (" + GiB(other.peak_memory_bytes) + " vs " +
           GiB(best.peak_memory_bytes) + ") or a later tie-break";
  }
  return "+" + FormatFixed(slower, 1) + "% step: " + worst->name + " " + FormatMs(worst->other_ms) +
         " vs " + FormatMs(worst->best_ms);
}

std::string RunnersUp(const std::vector<Candidate>& ranked) {
  std::string text;
  for (size_t i = 1; i < ranked.size(); ++i) {
    const Candidate& c = ranked[i];
    text += "  " + std::to_string(i) + ". " + ConfigLine(c.plan) + ": " +
            FormatMs(c.evaluation.step_ms) + ", " +
            WhyLost(ranked.front().evaluation, c.evaluation) + "\n";
  }
  return text;
}

}  // namespace trident
