// trident simulate PLAN: predictions for a plan file (the planner's or a hand-written one).
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/cost_inputs.h"
#include "cli/format.h"
#include "cli/plan_json.h"
#include "core/file_util.h"
#include "planner/evaluate.h"

namespace trident {

// Shared with explain: the plan, its cost inputs and its evaluation.
struct EvaluatedPlan {
  Plan plan;
  std::unique_ptr<CostInputs> inputs;
  Evaluation evaluation;
};

// --cluster, or configs/clusters/<plan's cluster>.yaml when it exists.
Status ResolveCluster(const Plan& plan, const std::string& plan_path, CostOptions* options) {
  if (!options->cluster.empty()) return Status::Ok();
  std::string guess = "configs/clusters/" + plan.cluster + ".yaml";
  if (!std::filesystem::exists(guess)) {
    return InvalidArgument(plan_path + " names cluster '" + plan.cluster + "' but " + guess +
                           " does not exist; pass --cluster FILE");
  }
  options->cluster = guess;
  return Status::Ok();
}

StatusOr<EvaluatedPlan> LoadAndEvaluate(const std::string& plan_path, CostOptions options,
                                        double max_memory_gib) {
  EvaluatedPlan out;
  TRIDENT_ASSIGN_OR_RETURN(out.plan, LoadPlan(plan_path));
  TRIDENT_RETURN_IF_ERROR(ResolveCluster(out.plan, plan_path, &options));
  TRIDENT_ASSIGN_OR_RETURN(
      out.inputs, LoadCostInputs(options, out.plan.model, out.plan.seq_len, out.plan.dtype));
  EvaluateOptions evaluate;
  evaluate.memory_limit_bytes = static_cast<int64_t>(max_memory_gib * (1 << 30));
  TRIDENT_ASSIGN_OR_RETURN(out.evaluation, EvaluatePlan(*out.inputs->costs, out.plan, evaluate));
  return out;
}

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
  if (!ev.ok()) {
    std::cerr << "error: " << ev.status().message() << "\n";
    return 1;
  }
  if (!o.trace.empty()) {
    Status s = WriteFileAtomic(o.trace, TimelineToChromeTrace(ev->evaluation.simulation));
    if (!s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return 1;
    }
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
