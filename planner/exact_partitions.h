// The search's exact step: every partition of one configuration (stage cuts and, where the
// replicas are free, a replica count per stage) whose simulated step could beat the best found,
// by branch and bound on lower bounds of the step that planner/evaluate.h documents and
// tests/planner/lane_bound_test.cc checks. The search (planner/search.h) first finds good plans
// with the partition DP; this enumeration then proves that no partition of each configuration
// steps faster, or finds the ones that do. One stage per position (v = 1): interleaved cuts are
// not enumerated (planner/README.md says why). Internal to the planner.
//
// Bounds, for stage s of a partition built left to right (layers [a, b] on r replicas, lane of
// m = ⌈M / r⌉ micro-batches, T = F + B + W of one micro-batch, opt the position's optimizer step
// as evaluate.h costs it, once or, under PipeDream, m times a step):
//   flushing schedules          step ≥ max over stages of (prefix_s + m·T_s) + max_s opt_s,
//                               prefix_s = Σ_{q<s} (F_q + B_q + W_q + 2·send_q), or under ZB-H1
//                               Σ_{q<s} (F_q + send_q);
//   PipeDream                   step ≥ max_s m·T_s + max_s m·(opt_s + sync_s) (its steady state
//                               has no fill; sync_s the all-reduce before each of its updates);
// and for the layers R not yet placed on the U' units left, some later stage's lane holds at
// least M·T(R) / U' (each of its lanes runs M / r of a stage's micro-batches), after the prefix
// the placed stages have built. A stage whose memory alone (the position's footprint without
// the tied embedding's copy, which only adds) exceeds the limit ends its branch.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/plan.h"
#include "planner/cost_model.h"
#include "planner/search_costs.h"
#include "planner/stage_costs.h"

namespace trident::search_internal {

struct PartitionSpace {
  const CostModel* costs = nullptr;
  const StageCosts* stage_costs = nullptr;
  Config config;  // pp, schedule, micro-batches, sharding, tp · cp units; v = 1
  int units = 0;  // tp · cp groups the stages' replicas sum to
  // Replicas of each stage (config.pp entries, summing to `units`); empty: any count from 1 to
  // M, summing to `units` (no sharding only).
  std::vector<int> replicas;
  int64_t memory_limit_bytes = 0;
  bool master_weights = false;  // MemoryContext::master_weights
};

// Calls `leaf` with every partition of `space` whose lower bound is below *best_ms, reading
// *best_ms afresh at every branch, so that `leaf` may lower it as it finds faster plans. Returns
// the number of branches visited.
int64_t EnumeratePartitionsBelow(const PartitionSpace& space, const double* best_ms,
                                 const std::function<void(std::vector<PlanStage>)>& leaf);

}  // namespace trident::search_internal
