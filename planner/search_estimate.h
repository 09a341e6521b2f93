// The search's closed-form step estimate (DESIGN.md §5), which ranks the partitions the DP
// chooses so that only the best are simulated (planner/search.h). Internal to the planner.
#pragma once

#include <vector>

#include "core/plan.h"
#include "planner/search_costs.h"
#include "planner/stage_costs.h"

namespace trident::search_internal {

// A position's busiest lane runs ceil(M / r) micro-batches of its chunks' T = F + B + W (round
// robin, core/replica_lanes.h); the busiest position sets the pace, and the pipeline's fill and
// drain add one pass through the other stages; with uniform replication the data-parallel
// communication follows (DataParallelMs, sharding_comm.h).
double EstimateMs(const Config& c, const DpCosts& dp_costs, const StageCosts& costs,
                  const std::vector<PlanStage>& stages);

}  // namespace trident::search_internal
