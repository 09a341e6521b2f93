// DpShard: one rank's place in sharded data parallelism (Plan::dp_sharding, ZeRO), and which
// elements of each parameter it steps.
//
// The shard group of a rank is its grad group (RankMap::GradGroup: the position's replicas, each
// with its cp ranks, dp-major) cut into consecutive blocks of Plan::ShardReplicas · cp ranks;
// with hybrid sharding (dp_shard < dp) the blocks hold the same shards, and the ranks at one
// index of every block form the replicate group, over which the shards' gradients are summed
// too. Without sharding the group is the rank alone (n = 1).
//
// Chunks: a parameter of `numel` elements is cut into n chunks of ⌈numel / n⌉, the last ones
// shorter or empty; rank r of the group steps chunk r, elements [r·chunk, r·chunk + length).
// Every rank computes the same chunk size, so a flat buffer of n blocks of Σ chunks lines up
// for a reduce-scatter of gradients and an all-gather of parameters (runtime/train/grad_sync.h).
//
// Optimizer: with optimizer sharding (ZeRO-1) a rank keeps the optimizer state of its chunks
// only, steps its chunks, and the parameters are all-gathered after the step. The gradients
// stay whole on each rank; only their chunk is summed over the group. With gradient sharding
// (ZeRO-2) a rank also keeps only its chunks of the summed gradients, reduce-scattered layer by
// layer (runtime/train/grad_sync.h). With parameter sharding (ZeRO-3, FSDP) a rank keeps only
// its chunks of the parameters too, and a layer's whole parameters exist while it runs.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan.h"
#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"

namespace trident {

struct ShardSpan {
  int64_t chunk = 0;   // elements in every rank's chunk (the last ones padded)
  int64_t offset = 0;  // of this rank's chunk in the flat parameter
  int64_t length = 0;  // of this rank's chunk that lies inside the parameter (0..chunk)
};

// Chunk `r` of `n` of a parameter of `numel` elements. REQUIRES: 0 <= r < n, numel >= 0.
ShardSpan ShardOf(int64_t numel, int n, int r);

// The ranks of `rank`'s shard group and of its replicate group, world ranks in group order,
// for a plan whose dp_sharding is not none. `grad_group` is RankMap::GradGroup(rank) and
// `shard_ranks` = Plan::ShardReplicas · cp of its position.
// REQUIRES: shard_ranks divides grad_group.size(); rank in grad_group.
std::vector<int> ShardGroupOf(const std::vector<int>& grad_group, int shard_ranks, int rank);
std::vector<int> ReplicateGroupOf(const std::vector<int>& grad_group, int shard_ranks, int rank);

// The chunk (DpShard::Of) of each parameter's summed gradient and of its value, in the order of
// StageModel::parameters() (undefined tensors for an empty chunk): what the optimizer steps.
struct ParamChunks {
  std::vector<Tensor> grads;
  std::vector<Tensor> values;
};

struct DpShard {
  int n = 1;  // ranks of the shard group
  int r = 0;  // this rank's index in it
  // Whether this rank's block is the grad group's first: the one whose chunks count once in
  // the job's gradient norm (without sharding: dp rank 0, cp rank 0).
  bool first_block = true;
  bool shard_grads = false;        // gradient sharding (ZeRO-2): dp_sharding gradients or full
  bool shard_params = false;       // parameter sharding (ZeRO-3, FSDP): dp_sharding full
  Comm* shard_comm = nullptr;      // null when n == 1
  Comm* replicate_comm = nullptr;  // null without hybrid groups

  bool sharded() const { return n > 1; }
  ShardSpan Of(int64_t numel) const { return ShardOf(numel, n, r); }
  // The chunk [offset, offset + length) of `t`, flat.
  static Tensor Chunk(Tensor& t, const ShardSpan& span);
  // The whole tensor of `numel` elements whose chunk on every rank of the group is `chunk`
  // (length elements of this rank's span; may be undefined when the span is empty), on the
  // host: an all-gather over the shard group, so every rank of it calls this in the same order.
  StatusOr<std::vector<float>> Gather(Compute& compute, const Tensor& chunk, int64_t numel) const;
};

}  // namespace trident
