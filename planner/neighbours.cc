#include "planner/neighbours.h"

#include <algorithm>
#include <utility>

#include "planner/plan_request.h"
#include "planner/report.h"

namespace trident {
namespace {

// Adds the neighbour `change` made by applying `edit` to the plan's fixed choices.
template <typename Edit>
void Add(const Plan& plan, std::vector<Neighbour>* out, std::string change, Edit edit) {
  SearchRequest request = FixedChoicesRequest(plan);
  edit(request.constraints);
  out->push_back({std::move(change), std::move(request)});
}

// A mesh change may leave dp 1, where nothing is sharded: level none stays allowed.
void AllowNone(SearchConstraints& c) {
  if (std::find(c.dp_sharding.begin(), c.dp_sharding.end(), DpSharding::kNone) ==
      c.dp_sharding.end()) {
    c.dp_sharding.push_back(DpSharding::kNone);
  }
  c.dp_shard.reset();
}

// tp, cp, pp and micro-batch size doubled (`up`) or halved, those that stay >= 1.
void AddScaled(const Plan& plan, bool up, std::vector<Neighbour>* out) {
  auto scale = [up](int value) { return up ? value * 2 : value / 2; };
  const int tp = scale(plan.mesh.tp);
  const int cp = scale(plan.mesh.cp);
  const int pp = scale(plan.mesh.pp);
  const int mb = scale(plan.micro_batch_size);
  if (tp >= 1) {
    Add(plan, out, "tp " + std::to_string(tp), [tp](SearchConstraints& c) {
      c.tp = tp;
      AllowNone(c);
    });
  }
  if (cp >= 1) {
    Add(plan, out, "cp " + std::to_string(cp), [cp](SearchConstraints& c) {
      c.cp = cp;
      AllowNone(c);
    });
  }
  if (pp >= 1) {
    Add(plan, out, "pp " + std::to_string(pp), [pp](SearchConstraints& c) {
      c.pp = pp;
      AllowNone(c);
    });
  }
  if (mb >= 1) {
    Add(plan, out, "micro-batch " + std::to_string(mb),
        [mb](SearchConstraints& c) { c.micro_batch = mb; });
  }
}

void AddOtherModes(const Plan& plan, std::vector<Neighbour>* out) {
  for (const auto& [name, kind] : ScheduleKindNames()) {
    if (kind == plan.schedule) continue;
    Add(plan, out, "schedule " + name, [k = kind](SearchConstraints& c) { c.schedules = {k}; });
  }
  for (const auto& [name, mode] : RecomputeModeNames()) {
    if (mode == plan.stages.front().recompute) continue;
    Add(plan, out, "recompute " + name, [m = mode](SearchConstraints& c) { c.recompute = {m}; });
  }
  if (plan.mesh.dp > 1) {
    for (const auto& [name, level] : DpShardingNames()) {
      if (level == plan.dp_sharding) continue;
      Add(plan, out, "dp_sharding " + name, [l = level](SearchConstraints& c) {
        c.dp_sharding = {l};
        c.dp_shard.reset();
      });
    }
  }
  if (plan.mesh.tp > 1) {
    Add(plan, out,
        plan.sequence_parallel ? "without sequence parallelism" : "with sequence parallelism",
        [sp = !plan.sequence_parallel](SearchConstraints& c) { c.sequence_parallel = sp; });
  }
}

// Per-stage replication against the best uniform replication of the same schedule: every
// other choice (mesh, micro-batch, recompute, sharding) searched.
void AddUniform(const Plan& plan, std::vector<Neighbour>* out) {
  if (UniformReplication(plan.stages)) return;
  SearchRequest request = RequestForJob(plan);
  request.runners_up = 0;
  request.constraints.schedules = {plan.schedule};
  request.constraints.replicate_stages = false;
  out->push_back({"uniform replication", std::move(request), /*show_plan=*/true});
}

NeighbourOutcome Replan(const CostModel& costs, const Neighbour& neighbour, double plan_step_ms) {
  NeighbourOutcome outcome{neighbour.change, Status::Ok()};
  StatusOr<SearchResult> result = SearchPlans(costs, neighbour.request);
  if (!result.ok()) {
    outcome.status = result.status();
    return outcome;
  }
  const Evaluation& best = result->ranked.front().evaluation;
  outcome.step_ms = best.step_ms;
  outcome.step_change_pct = 100 * (best.step_ms / plan_step_ms - 1);
  outcome.peak_memory_bytes = best.peak_memory_bytes;
  if (neighbour.show_plan) outcome.change += ": " + ConfigLine(result->ranked.front().plan);
  return outcome;
}

}  // namespace

SearchRequest FixedChoicesRequest(const Plan& plan) {
  SearchRequest request = RequestForJob(plan);
  request.runners_up = 0;
  SearchConstraints& c = request.constraints;
  c.tp = plan.mesh.tp;
  c.cp = plan.mesh.cp;
  c.pp = plan.mesh.pp;
  c.micro_batch = plan.micro_batch_size;
  c.schedules = {plan.schedule};
  c.recompute = {plan.stages.front().recompute};
  if (plan.mesh.tp > 1) c.sequence_parallel = plan.sequence_parallel;
  c.max_virtual_stages = std::max(plan.virtual_stages, 2);
  c.dp_sharding = {plan.dp_sharding};
  if (plan.dp_shard > 0) c.dp_shard = plan.dp_shard;
  return request;
}

std::vector<Neighbour> NeighbourRequests(const Plan& plan) {
  std::vector<Neighbour> out = {{"(same choices)", FixedChoicesRequest(plan)}};
  AddScaled(plan, /*up=*/true, &out);
  AddScaled(plan, /*up=*/false, &out);
  AddOtherModes(plan, &out);
  AddUniform(plan, &out);
  return out;
}

std::vector<NeighbourOutcome> ExploreNeighbours(const CostModel& costs, const Plan& plan,
                                                double plan_step_ms) {
  std::vector<NeighbourOutcome> out;
  for (const Neighbour& neighbour : NeighbourRequests(plan)) {
    out.push_back(Replan(costs, neighbour, plan_step_ms));
  }
  return out;
}

}  // namespace trident
