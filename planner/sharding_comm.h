// The data-parallel communication of one pipeline position at each sharding level
// (core/plan.h DpSharding): what the evaluation charges (planner/evaluate.h has the step
// formulas) and what the partition DP's stage costs read, computed in this one place.
#pragma once

#include "core/plan.h"
#include "planner/cost_model.h"
#include "planner/memory_model.h"

namespace trident {

// The links of a position's grad group (RankMap::GradGroup: its replicas, each with its cp
// ranks), cut into shard groups of n = shard replicas · cp ranks.
struct ShardGroupLinks {
  int ranks = 1;                                      // the grad group's: replicas · cp
  int level = 0;                                      // the level the grad group spans
  int shard_ranks = 1;                                // n
  int shard_level = 0;                                // the level one shard group spans
  int Copies() const { return ranks / shard_ranks; }  // shard groups holding the same shards
};

// One position's collectives (P, G: its parameter and gradient bytes, P_l: its largest layer's
// parameters; RS, AG, AR: reduce-scatter, all-gather, all-reduce over n ranks at the shard
// group's level unless said; c = Copies()):
//   sync_ms         after the lane's last backward, hidden by the other positions' later work:
//                   none AR(G) over the grad group; optimizer and gradients RS(G); full nothing
//                   (its last reduce-scatter is a micro-batch's); hybrid (c > 1) adds AR(G / n)
//                   over the c copies at the grad group's level
//   gather_ms       optimizer and gradients: AG(P) after the optimizer step, never hidden
//   micro_batch_ms  gradients: RS(G) after each micro-batch's backward; full: AG(P) before
//                   forward, AG(P) before backward and RS(G) after it, per micro-batch
//   prefetch_ms     full: AG(P_l), the first layer's gather that no compute hides
struct ShardingComm {
  double sync_ms = 0;
  double gather_ms = 0;
  double micro_batch_ms = 0;
  double prefetch_ms = 0;
};

ShardingComm ShardingCommOf(const CostModel& costs, DpSharding level, const PositionFootprint& f,
                            const ShardGroupLinks& links);

// The per-micro-batch communication a lane of m micro-batches, each computing compute_ms on
// the position, leaves exposed (the collectives overlap the compute they run beside, layer by
// layer):
//   gradients  (m − 1) · max(0, micro_batch − compute): the last micro-batch's reduce-scatter
//              is sync_ms
//   full       m · max(0, micro_batch − compute) + prefetch
//   otherwise  0
double ExposedMicroBatchCommMs(DpSharding level, const ShardingComm& comm, int m,
                               double compute_ms);

}  // namespace trident
