// trident explain PLAN: why this plan — the bottleneck, the split of the step, and what the
// neighbouring choices would give.
#include <iostream>

#include "cli/command.h"
#include "cli/cost_inputs.h"
#include "cli/evaluated_plan.h"
#include "cli/format.h"
#include "planner/search.h"

namespace trident {

namespace {

struct ExplainOptions {
  std::string plan;
  CostOptions cost;
};

// The plan's own choices as search constraints; a neighbour changes one of them.
SearchRequest FixedRequest(const Plan& plan) {
  SearchRequest r;
  r.model = plan.model;
  r.cluster_name = plan.cluster;
  r.devices = plan.devices;
  r.global_batch = plan.global_batch;
  r.seq_len = plan.seq_len;
  r.dtype = plan.dtype;
  r.runners_up = 0;
  SearchConstraints& c = r.constraints;
  c.tp = plan.mesh.tp;
  c.pp = plan.mesh.pp;
  c.micro_batch = plan.micro_batch_size;
  c.schedules = {plan.schedule};
  c.recompute = {plan.stages.front().recompute};
  c.max_virtual_stages = std::max(plan.virtual_stages, 2);
  return r;
}

std::vector<std::pair<std::string, SearchRequest>> Neighbours(const Plan& plan) {
  // The first row re-plans the same choices, so each change is judged against cuts the
  // planner chose, not against hand-written ones.
  std::vector<std::pair<std::string, SearchRequest>> out = {{"(same choices)", FixedRequest(plan)}};
  auto add = [&out, &plan](std::string label, auto change) {
    SearchRequest r = FixedRequest(plan);
    change(r.constraints);
    out.emplace_back(std::move(label), std::move(r));
  };
  for (int f : {2, -2}) {
    int tp = f > 0 ? plan.mesh.tp * 2 : plan.mesh.tp / 2;
    int pp = f > 0 ? plan.mesh.pp * 2 : plan.mesh.pp / 2;
    int mb = f > 0 ? plan.micro_batch_size * 2 : plan.micro_batch_size / 2;
    if (tp >= 1) add("tp " + std::to_string(tp), [tp](SearchConstraints& c) { c.tp = tp; });
    if (pp >= 1) add("pp " + std::to_string(pp), [pp](SearchConstraints& c) { c.pp = pp; });
    if (mb >= 1)
      add("micro-batch " + std::to_string(mb), [mb](SearchConstraints& c) { c.micro_batch = mb; });
  }
  for (const auto& [name, kind] : ScheduleKindNames()) {
    if (kind == plan.schedule) continue;
    add("schedule " + name, [k = kind](SearchConstraints& c) { c.schedules = {k}; });
  }
  for (const auto& [name, mode] : RecomputeModeNames()) {
    if (mode == plan.stages.front().recompute) continue;
    add("recompute " + name, [m = mode](SearchConstraints& c) { c.recompute = {m}; });
  }
  if (plan.mesh.dp > 1) {
    add(plan.zero1 ? "without zero1" : "with zero1",
        [z = !plan.zero1](SearchConstraints& c) { c.zero1 = z; });
  }
  return out;
}

int RunExplain(const ExplainOptions& o) {
  StatusOr<EvaluatedPlan> ev = LoadAndEvaluate(o.plan, o.cost, 0);
  if (!ev.ok()) return PrintError(ev.status());
  std::cout << ev->plan.model.name << ": " << ConfigLine(ev->plan) << "\n"
            << StepBreakdown(ev->plan, ev->evaluation)
            << "\nneighbouring choices (each re-planned with the plan's other choices fixed; "
               "dp follows from tp and pp, ZeRO-1 is free):\n";
  TextTable table({"change", "step", "vs this plan", "peak memory"});
  for (const auto& [label, request] : Neighbours(ev->plan)) {
    StatusOr<SearchResult> result = SearchPlans(*ev->inputs->costs, request);
    if (!result.ok()) {
      table.AddRow(
          {label, "-",
           result.status().code() == StatusCode::kInfeasible ? "does not fit" : "not possible",
           "-"});
      continue;
    }
    const Evaluation& n = result->ranked.front().evaluation;
    double delta = 100 * (n.step_ms / ev->evaluation.step_ms - 1);
    table.AddRow({label, FormatMs(n.step_ms), (delta >= 0 ? "+" : "") + FormatFixed(delta, 1) + "%",
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
