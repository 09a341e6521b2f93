// trident simulate PLAN: predictions for a plan file (the planner's or a hand-written one).
#include <iostream>

#include "cli/command.h"
#include "cli/cost_inputs.h"
#include "cli/evaluated_plan.h"
#include "cli/format.h"
#include "cli/plan_json.h"
#include "core/file_util.h"
#include "planner/evaluate.h"
#include "planner/plan_inputs.h"
#include "planner/report.h"

namespace trident {

namespace {

struct SimulateOptions {
  std::string plan;
  CostOptions cost;
  double max_memory_gib = 0;
  std::string trace;
  bool json = false;
};

int RunSimulate(const SimulateOptions& o) {
  StatusOr<EvaluatedPlan> ev = LoadAndEvaluate(o.plan, o.cost, o.max_memory_gib);
  if (!ev.ok()) return PrintError(ev.status());
  if (!o.trace.empty()) {
    Status s = WriteFileAtomic(o.trace, TimelineToChromeTrace(ev->evaluation.simulation));
    if (!s.ok()) return PrintError(s);
  }
  ReportContext context = MakeReportContext(ev->plan, ev->inputs->cluster);
  if (o.json) {
    std::cout << JsonText(EvaluationJson(ev->plan, ev->evaluation, context));
  } else {
    std::cout << PlanSummary(ev->plan, ev->evaluation, context);
    if (!o.trace.empty()) std::cout << "wrote " << o.trace << "\n";
  }
  if (!ev->evaluation.Fits()) {
    std::cerr << "error: " << o.plan << ": needs " << FormatBytes(ev->evaluation.peak_memory_bytes)
              << " on its fullest rank but the device has "
              << FormatBytes(ev->evaluation.memory_limit_bytes)
              << "; try 'trident plan' or more recompute\n";
    return 1;
  }
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd =
      app.add_subcommand("simulate", "Predict step time, bubble and memory of a plan file");
  cmd->add_option("plan", o->plan, "Plan file")->required()->check(CLI::ExistingFile);
  AddCostOptions(cmd, &o->cost, /*cluster_required=*/false);
  cmd->add_option("--max-memory", o->max_memory_gib,
                  "Memory per device, GiB [default: the device's]")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--trace", o->trace, "Write the simulated step as a Chrome trace (Perfetto)");
  cmd->add_flag("--json", o->json, "Print the predictions as JSON");
  cmd->footer("Without --cluster, configs/clusters/<the plan's cluster>.yaml is used.");
  cmd->callback([o, exit_code] { *exit_code = RunSimulate(*o); });
}

}  // namespace trident
