// The first step of the search (planner/search.h): the outer loop's configurations, enumerated
// from the request and the cost model's choices alone (its tp, cp and micro-batch sizes and the
// devices per node), before anything is costed. Internal to the planner.
//
// Configurations come in groups that share their stage costs: one tensor-parallel unit (tp,
// sequence parallelism, cp), pp, micro-batch size and recompute mode, and
//  - a mesh: dp replicas of every position, each configuration one schedule (with its virtual
//    stages), sharding level and shard group;
//  - per-stage replication: the replicas of each position searched (any count; their sum the
//    units, devices / (tp · cp)), each configuration one schedule that runs it (1F1B, GPipe,
//    ZB-H1, PipeDream), unsharded; up to kMaxReplicatedUnits units, or on every mesh with
//    `exact`;
//  - fixed replicas (--replicas): the user's counts, each configuration one such schedule.
// The order is the search's, and deterministic: tp as the cost model lists them, then cp,
// sequence parallelism off before on; for each unit its meshes by increasing pp, then (where
// searched) per-stage replication by increasing pp; within each, micro-batch size, then
// recompute mode.
#pragma once

#include <vector>

#include "planner/cost_model.h"
#include "planner/search.h"
#include "planner/search_costs.h"

namespace trident::search_internal {

// The per-stage replication DP seeds the search up to this many units (it grows with units²
// for every pp); with `exact`, the exact step enumerates per-stage replication on every mesh.
inline constexpr int kMaxReplicatedUnits = 16;

struct SearchGroup {
  enum class Kind { kMesh, kReplicated, kFixedReplicas };
  Kind kind = Kind::kMesh;
  // tp, sp, cp, pp, micro_batch, micro_batches and recompute; dp for a mesh.
  Config base;
  std::vector<Config> configs;  // base with its schedule, v, sharding and shard filled in
};

// Every group of `request`'s search, in the search's order. REQUIRES: the request passed the
// search's checks (devices within the cluster, valid --cuts and --replicas).
std::vector<SearchGroup> EnumerateSearch(const CostModel& costs, const SearchRequest& request);

// The schedules the search tries: the request's, or every synchronous one.
std::vector<ScheduleKind> SearchedSchedules(const SearchConstraints& constraints);
// The data-parallel sharding levels the search tries: the request's, or none and optimizer.
std::vector<DpSharding> SearchedLevels(const SearchConstraints& constraints);

}  // namespace trident::search_internal
