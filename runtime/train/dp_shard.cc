#include "runtime/train/dp_shard.h"

#include <algorithm>

namespace trident {

ShardSpan ShardOf(int64_t numel, int n, int r) {
  ShardSpan span;
  span.chunk = (numel + n - 1) / n;
  span.offset = std::min(numel, span.chunk * r);
  span.length = std::min(span.chunk, numel - span.offset);
  return span;
}

std::vector<int> ShardGroupOf(const std::vector<int>& grad_group, int shard_ranks, int rank) {
  const auto at = std::find(grad_group.begin(), grad_group.end(), rank) - grad_group.begin();
  const auto first = grad_group.begin() + at / shard_ranks * shard_ranks;
  return {first, first + shard_ranks};
}

std::vector<int> ReplicateGroupOf(const std::vector<int>& grad_group, int shard_ranks, int rank) {
  const auto at = std::find(grad_group.begin(), grad_group.end(), rank) - grad_group.begin();
  std::vector<int> group;
  for (size_t i = at % shard_ranks; i < grad_group.size(); i += shard_ranks) {
    group.push_back(grad_group[i]);
  }
  return group;
}

Tensor DpShard::Chunk(Tensor& t, const ShardSpan& span) {
  return t.View(span.offset, {span.length});
}

StatusOr<std::vector<float>> DpShard::Gather(Compute& compute, const Tensor& chunk,
                                             int64_t numel) const {
  const ShardSpan span = Of(numel);
  Tensor mine = compute.Allocate({span.chunk});
  if (span.length > 0) {
    Tensor valid = mine.View(0, {span.length});
    compute.Copy(chunk, valid);
  }
  Tensor all = compute.Allocate({span.chunk * n});
  compute.Synchronize();
  TRIDENT_RETURN_IF_ERROR(shard_comm->AllGather(mine.span<float>(), all.span<float>()));
  std::vector<float> host = compute.CopyToHost(all);
  host.resize(static_cast<size_t>(numel));  // the chunks are consecutive; padding is last
  return host;
}

}  // namespace trident
