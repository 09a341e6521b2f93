// The neighbouring choices of a plan, for `trident explain`: each changes one of the plan's
// choices, keeps the others fixed and is re-planned by the search, so a change is judged with
// the stage cuts the planner would choose for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "planner/cost_model.h"
#include "planner/search.h"

namespace trident {

// One neighbour: what changed ("tp 16", "schedule gpipe", "dp_sharding full") and the request
// that re-plans it.
struct Neighbour {
  std::string change;
  SearchRequest request;
  bool show_plan = false;  // the outcome names the plan it found (ConfigLine)
};

// `plan`'s job with its choices fixed: tp, cp, pp, micro-batch size, schedule, the first stage's
// recompute mode, sequence parallelism, the sharding level and shard group, and up to max(v, 2)
// virtual stages. dp follows from tp, cp and pp. No runners-up. REQUIRES (here and below):
// plan.Validate() is ok.
SearchRequest FixedChoicesRequest(const Plan& plan);

// "(same choices)" first (the plan's choices re-planned, the row the others compare with),
// then tp, cp, pp and micro-batch size doubled, then halved (those that stay >= 1; each also
// allows level none, as dp may become 1), every other schedule, every other recompute mode,
// every other sharding level when dp > 1 (its shard groups left to the search), sequence
// parallelism switched when tp > 1 and, for a plan with per-stage replication, the best plan of
// its schedule with uniform replication, every other choice searched.
std::vector<Neighbour> NeighbourRequests(const Plan& plan);

// A neighbour re-planned: the best plan's step time and peak memory, or why there is none
// (Infeasible: nothing fits in memory; InvalidArgument: no such configuration).
struct NeighbourOutcome {
  std::string change;  // with ": " and the plan found, for a Neighbour::show_plan
  Status status;
  double step_ms = 0;
  double step_change_pct = 0;  // against the plan's own step time
  int64_t peak_memory_bytes = 0;
};

// REQUIRES: `plan_step_ms` > 0, the plan's own predicted step time on `costs`.
std::vector<NeighbourOutcome> ExploreNeighbours(const CostModel& costs, const Plan& plan,
                                                double plan_step_ms);

}  // namespace trident
