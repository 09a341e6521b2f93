// trident explain PLAN: why this plan — the bottleneck, the split of the step, and what the
// neighbouring choices would give.
#include <iostream>

#include "cli/command.h"
#include "cli/cost_inputs.h"
#include "cli/evaluated_plan.h"
#include "cli/format.h"
#include "planner/assumptions.h"
#include "planner/neighbours.h"
#include "planner/report.h"

namespace trident {

namespace {

struct ExplainOptions {
  std::string plan;
  CostOptions cost;
};

int RunExplain(const ExplainOptions& o) {
  StatusOr<EvaluatedPlan> ev = LoadAndEvaluate(o.plan, o.cost, 0);
  if (!ev.ok()) return PrintError(ev.status());
  std::cout
      << ev->plan.model.name << ": " << ConfigLine(ev->plan) << "\n"
      << StepBreakdown(ev->plan, ev->evaluation) << "\n"
      << AssumptionsText(ev->plan, ev->evaluation, ev->inputs->cluster,
                         ev->inputs->profile.method.source)
      << "\nneighbouring choices (each re-planned with the plan's other choices fixed; "
         "dp follows from tp, cp and pp; each sharding level over the search's shard groups):\n";
  TextTable table({"change", "step", "vs this plan", "peak memory"});
  for (const NeighbourOutcome& n :
       ExploreNeighbours(*ev->inputs->costs, ev->plan, ev->evaluation.step_ms)) {
    if (!n.status.ok()) {
      bool infeasible = n.status.code() == StatusCode::kInfeasible;
      table.AddRow({n.change, "-", infeasible ? "does not fit" : "not possible", "-"});
      continue;
    }
    table.AddRow({n.change, FormatMs(n.step_ms),
                  (n.step_change_pct >= 0 ? "+" : "") + FormatFixed(n.step_change_pct, 1) + "%",
                  FormatBytes(static_cast<double>(n.peak_memory_bytes))});
  }
  std::cout << table.ToString();
  return 0;
}

}  // namespace

void AddExplainCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Explain a plan: bottleneck, step breakdown, and the neighbouring choices");
  cmd->add_option("plan", o->plan, "Plan file")->required()->check(CLI::ExistingFile);
  AddCostOptions(cmd, &o->cost, /*cluster_required=*/false);
  cmd->footer("Without --cluster, configs/clusters/<the plan's cluster>.yaml is used.");
  cmd->callback([o, exit_code] { *exit_code = RunExplain(*o); });
}

}  // namespace trident
