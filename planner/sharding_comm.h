// The data-parallel communication of one pipeline position at each sharding level
// (core/plan.h DpSharding): what the evaluation charges (planner/evaluate.h has the step
// formulas) and what the partition DP's stage costs read, computed in this one place.
#pragma once

#include <vector>

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

// The collectives ShardingComm is made of, on one position's links: level none's AR(G) over
// the grad group; a sharded level's RS(G), AG(P), AR(G / n) over the c copies and, fully
// sharded, AG(P_l) (left 0 at the other levels). The sharded levels share all but AG(P_l), so
// one ShardCollectivesOf at kFull serves them all.
struct ShardCollectives {
  double all_reduce = 0;
  double scatter = 0;
  double gather = 0;
  double across = 0;
  double prefetch = 0;
};

ShardCollectives ShardCollectivesOf(const CostModel& costs, DpSharding level,
                                    const PositionFootprint& f, const ShardGroupLinks& links);

// ShardingCommOf from the collectives: ShardingCommOf(costs, level, f, links) is
// ShardingCommFrom(level, ShardCollectivesOf(costs, level', f, links)), bit for bit, for level'
// none if level is, else any sharded level' (kFull where level is).
ShardingComm ShardingCommFrom(DpSharding level, const ShardCollectives& collectives);

// The per-micro-batch communication a lane of m micro-batches, each computing compute_ms on
// the position, leaves exposed (the collectives overlap the compute they run beside, layer by
// layer):
//   gradients  (m − 1) · max(0, micro_batch − compute): the last micro-batch's reduce-scatter
//              is sync_ms
//   full       m · max(0, micro_batch − compute) + prefetch
//   otherwise  0
double ExposedMicroBatchCommMs(DpSharding level, const ShardingComm& comm, int m,
                               double compute_ms);

// One pipeline position of a uniformly replicated plan: the sum of its chunks' footprints (the
// largest layer's as the largest of theirs), the compute of one micro-batch on it, its links.
struct PositionComm {
  PositionFootprint footprint;
  double compute_ms = 0;
  ShardGroupLinks links;
};

// The data-parallel communication the evaluation adds to the makespan, as the search's
// closed-form estimate counts it: the slowest position's terms that nothing hides (gather_ms
// and the per-micro-batch collectives left exposed, lanes of `lane` micro-batches) plus, but
// under PipeDream, position 0's sync_ms (the flushing schedules end on position 0's last
// backward). REQUIRES: positions is not empty.
double DataParallelMs(const CostModel& costs, DpSharding level, bool pipedream, int lane,
                      const std::vector<PositionComm>& positions);

// A lower bound on DataParallelMs for any cut, from the first layer alone (position 0 holds
// it): its sync_ms (but under PipeDream), gather_ms and, fully sharded, prefetch_ms on position
// 0's links. Sound because every collective's time grows with its bytes
// (tests/planner/sharding_test.cc checks it against every cut of random layers).
double DataParallelLowerBoundMs(const CostModel& costs, DpSharding level, bool pipedream,
                                const PositionFootprint& first_layer,
                                const ShardGroupLinks& position0);

}  // namespace trident
