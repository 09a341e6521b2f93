// The search's exact step: every partition of one configuration (stage cuts and, where the
// replicas are free, a replica count per stage) whose simulated step could beat the best found,
// by branch and bound on lower bounds of the step. The search (planner/search.h) first finds
// good plans with the partition DP; this enumeration then proves that no partition of each
// configuration steps faster, or finds the ones that do. One stage per position (v = 1):
// interleaved cuts are not enumerated (planner/README.md says why). Internal to the planner.
//
// A partition is built stage by stage, left to right: stage s holds layers [a, b] on r
// replicas, its busiest lane running m = ⌈M / r⌉ micro-batches (core/replica_lanes.h). A branch
// ends when a lower bound on the step of every completion reaches the best step found:
//   flushing schedules  step ≥ max over placed stages of max(makespan_s, lane_s + sync_s)
//                              + max_s optimizer_s + max_s gather_s + max_s exposed_s
//     makespan_s, lane_s  planner/lane_bound.h from the stage's times, its lane's warm-up
//                         (WarmUpRule), the placed stages' forwards and backwards before it, and
//                         for the round trip the layers after b (forward and backward) and the
//                         sends: the boundary after b, and at least the cheapest boundary's
//                         send for each later one; under 1f1b and zb_h1 also the pair bound of
//                         stage s − 1 and s (PairBoundOf: stages whose lane cycles differ
//                         serialize), and for a whole partition, before it is simulated, that
//                         of every two of its stages and the window bound (window_bound.h) of
//                         every two neighbours whose replica counts differ;
//     sync_s              its gradient collective after its last backward (evaluate.h: the
//                         position's exposed sync ends no earlier than lane_s + sync_s);
//     optimizer, gather, exposed   the terms evaluate.h takes the largest of over positions;
//   PipeDream           step ≥ max_s m_s·T_s + max_s m_s·sync_s + max_s m_s·optimizer_s (its
//                       steady state has no fill; sync_s the all-reduce before each update);
// where T = F + B + W of one micro-batch and each term is the stage's own (a position's
// tied-embedding copy only adds). The layers R not yet placed, on the U' units left: some
// later lane runs M·T(R) / U' after the placed stages' forwards and backwards, which also caps
// a stage's replicas from above.
//
// Replica counts from below: ExactBounds::LeastReplicas, the least count whose memory fits and
// whose lane and sync bounds stay under the best. A table holds, for each k and first layer a,
// the fewest units on which the last k positions can hold layers [a, L) that way (with nothing
// known of the stages before but their layers), so a configuration whose pp positions cannot
// hold the model on its units is skipped, and a stage that leaves too few units ends its branch
// before any of it is costed. With free replicas a row does not depend on pp (each stage at
// its Slot {0, k}, no sends counted), so the configurations that differ only in pp share one
// table (LeastUnitsCache), each adding the rows it needs; a row built while the best was higher
// is only weaker.
//
// Futile prefixes: a prefix none of whose completions reached a leaf is remembered by where it
// ends (position, layer, unit, warm-up state) with the figures every bound above grows with; a
// later prefix ending there, at least as large in each, is skipped (the best only falls).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "core/plan.h"
#include "planner/exact_bounds.h"

namespace trident::search_internal {

// The least-units tables of one search's free-replica spaces, by their configuration less pp:
// tables[family][k][a].
struct LeastUnitsCache {
  using Family = std::tuple<const StageCosts*, decltype(Config{}.Key()), int, int>;
  std::map<Family, std::vector<std::vector<int>>> tables;
};

// Calls `leaf` with every partition of `space` whose lower bound is below *best_ms, reading
// *best_ms afresh at every branch, so that `leaf` may lower it as it finds faster plans. Returns
// the number of branches visited. One cache serves every space of a search whose best only
// falls.
int64_t EnumeratePartitionsBelow(const PartitionSpace& space, const double* best_ms,
                                 const std::function<void(std::vector<PlanStage>)>& leaf,
                                 LeastUnitsCache* cache);

}  // namespace trident::search_internal
