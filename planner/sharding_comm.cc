#include "planner/sharding_comm.h"

#include <algorithm>

namespace trident {

ShardCollectives ShardCollectivesOf(const CostModel& costs, DpSharding level,
                                    const PositionFootprint& f, const ShardGroupLinks& links) {
  const double params = static_cast<double>(f.param_bytes);
  const double grads = static_cast<double>(f.grad_bytes);
  ShardCollectives c;
  if (level == DpSharding::kNone) {
    c.all_reduce =
        costs.CollectiveMsAtLevel(Collective::kAllReduce, grads, links.ranks, links.level);
    return c;
  }
  const int n = links.shard_ranks;
  c.scatter = costs.CollectiveMsAtLevel(Collective::kReduceScatter, grads, n, links.shard_level);
  c.gather = costs.CollectiveMsAtLevel(Collective::kAllGather, params, n, links.shard_level);
  c.across =
      costs.CollectiveMsAtLevel(Collective::kAllReduce, grads / n, links.Copies(), links.level);
  if (level == DpSharding::kFull) {
    c.prefetch = costs.CollectiveMsAtLevel(
        Collective::kAllGather, static_cast<double>(f.layer_param_bytes), n, links.shard_level);
  }
  return c;
}

ShardingComm ShardingCommFrom(DpSharding level, const ShardCollectives& c) {
  ShardingComm comm;
  if (level == DpSharding::kNone) {
    comm.sync_ms = c.all_reduce;
    return comm;
  }
  comm.sync_ms = c.across + (level == DpSharding::kFull ? 0 : c.scatter);
  if (level == DpSharding::kFull) {
    comm.micro_batch_ms = 2 * c.gather + c.scatter;
    comm.prefetch_ms = c.prefetch;
    return comm;
  }
  comm.gather_ms = c.gather;
  if (level == DpSharding::kGradients) comm.micro_batch_ms = c.scatter;
  return comm;
}

ShardingComm ShardingCommOf(const CostModel& costs, DpSharding level, const PositionFootprint& f,
                            const ShardGroupLinks& links) {
  return ShardingCommFrom(level, ShardCollectivesOf(costs, level, f, links));
}

double ExposedMicroBatchCommMs(DpSharding level, const ShardingComm& comm, int m,
                               double compute_ms) {
  const double excess = std::max(0.0, comm.micro_batch_ms - compute_ms);
  if (level == DpSharding::kGradients) return (m - 1) * excess;
  if (level == DpSharding::kFull) return m * excess + comm.prefetch_ms;
  return 0;
}

double DataParallelMs(const CostModel& costs, DpSharding level, bool pipedream, int lane,
                      const std::vector<PositionComm>& positions) {
  double unhidden = 0, first_sync = 0;
  for (size_t p = 0; p < positions.size(); ++p) {
    const PositionComm& position = positions[p];
    const ShardingComm comm = ShardingCommOf(costs, level, position.footprint, position.links);
    unhidden = std::max(
        unhidden, comm.gather_ms + ExposedMicroBatchCommMs(level, comm, lane, position.compute_ms));
    if (p == 0) first_sync = comm.sync_ms;
  }
  return unhidden + (pipedream ? 0 : first_sync);
}

double DataParallelLowerBoundMs(const CostModel& costs, DpSharding level, bool pipedream,
                                const PositionFootprint& first_layer,
                                const ShardGroupLinks& position0) {
  const ShardingComm comm = ShardingCommOf(costs, level, first_layer, position0);
  return (pipedream ? 0 : comm.sync_ms) + comm.gather_ms +
         (level == DpSharding::kFull ? comm.prefetch_ms : 0);
}

}  // namespace trident
