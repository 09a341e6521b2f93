// FullestPositionLowerBound, the bound that lets the search skip the partition DP, against every
// cut of small random layer footprints: no cut's fullest chunk or position may need less.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "planner/memory_model.h"

namespace trident {
namespace {

PositionFootprint Sum(const std::vector<PositionFootprint>& layers, int first, int end) {
  PositionFootprint f;
  for (int i = first; i < end; ++i) {
    f.param_bytes += layers[i].param_bytes;
    f.grad_bytes += layers[i].grad_bytes;
    f.optimizer_bytes += layers[i].optimizer_bytes;
    f.stash_bytes += layers[i].stash_bytes;
    f.workspace_bytes = std::max(f.workspace_bytes, layers[i].workspace_bytes);
    f.layer_param_bytes = std::max(f.layer_param_bytes, layers[i].layer_param_bytes);
    f.layer_grad_bytes = std::max(f.layer_grad_bytes, layers[i].layer_grad_bytes);
  }
  return f;
}

// The partition DP's judgement of chunk s: its footprint standing for v like it, on its position.
int64_t ChunkMemory(PositionFootprint f, int s, const MemoryContext& c) {
  f.param_bytes *= c.virtual_stages;
  f.grad_bytes *= c.virtual_stages;
  f.optimizer_bytes *= c.virtual_stages;
  f.stash_bytes *= c.virtual_stages;
  return PositionMemory(f, s % c.pp, c).Total();
}

// The least, over every cut into pp · v chunks, of the fullest chunk (the DP's rule) and of the
// fullest position (each position summing its chunks, the evaluation's rule).
void LeastFullest(const std::vector<PositionFootprint>& layers, const MemoryContext& c,
                  std::vector<int>* starts, int64_t* dp_least, int64_t* eval_least) {
  const int chunks = c.pp * c.virtual_stages, n = static_cast<int>(layers.size());
  if (static_cast<int>(starts->size()) == chunks) {
    int64_t dp_max = 0;
    std::vector<PositionFootprint> positions(c.pp);
    for (int s = 0; s < chunks; ++s) {
      const int end = s + 1 < chunks ? (*starts)[s + 1] : n;
      PositionFootprint f = Sum(layers, (*starts)[s], end);
      dp_max = std::max(dp_max, ChunkMemory(f, s, c));
      PositionFootprint& p = positions[s % c.pp];
      p = Sum({p, f}, 0, 2);
    }
    int64_t eval_max = 0;
    for (int p = 0; p < c.pp; ++p) {
      eval_max = std::max(eval_max, PositionMemory(positions[p], p, c).Total());
    }
    *dp_least = std::min(*dp_least, dp_max);
    *eval_least = std::min(*eval_least, eval_max);
    return;
  }
  // The first chunk starts at layer 0, each next one after the previous.
  const int first = starts->empty() ? 0 : starts->back() + 1;
  const int last = starts->empty() ? 0 : n - 1;
  for (int start = first; start <= last; ++start) {
    starts->push_back(start);
    LeastFullest(layers, c, starts, dp_least, eval_least);
    starts->pop_back();
  }
}

TEST(MemoryBound, NoCutNeedsLessThanTheBound) {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int64_t> bytes(0, 1000);
  const ScheduleKind kinds[] = {ScheduleKind::kGpipe, ScheduleKind::k1F1B,
                                ScheduleKind::kInterleaved1F1B, ScheduleKind::kZbH1};
  int checked = 0;
  for (int instance = 0; instance < 300; ++instance) {
    std::vector<PositionFootprint> layers(2 + instance % 6);
    for (PositionFootprint& f : layers) {
      f = {bytes(rng), bytes(rng), 0, bytes(rng), 4 * bytes(rng), bytes(rng) / 10};
      f.layer_param_bytes = f.param_bytes;
      f.layer_grad_bytes = f.grad_bytes;
    }
    const ScheduleKind kind = kinds[instance % 4];
    const int v = kind == ScheduleKind::kInterleaved1F1B ? 2 : 1;
    const int pp = 1 + instance % 3;
    if (pp * v > static_cast<int>(layers.size())) continue;
    const int replicas = 1 + (instance / 4) % 3;
    // Every sharding level, over whole dp or (four replicas) hybrid groups of two, cp 1 or 2.
    const DpSharding level = static_cast<DpSharding>((instance / 2) % 4);
    MemoryContext c{kind, pp, v, 1 + instance % 7, replicas + (instance % 5 == 0), level, 100};
    c.cp = 1 + (instance / 3) % 2;
    if (c.replicas == 4 && instance % 2 == 0) c.shard_replicas = 2;
    c.fragmentation = 0.05 * (instance % 3);  // none, or some of the activations held
    int64_t dp_least = INT64_MAX, eval_least = INT64_MAX;
    std::vector<int> starts;
    LeastFullest(layers, c, &starts, &dp_least, &eval_least);
    const int64_t bound = FullestPositionLowerBound(Sum(layers, 0, layers.size()), c);
    EXPECT_LE(bound, dp_least) << "instance " << instance;
    EXPECT_LE(bound, eval_least) << "instance " << instance;
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

// The search takes GPipe's and ZB-H1's partitions from 1F1B's where they keep its bottleneck
// (planner/partition.h PartitionUniformAbove), which needs their every position to hold at
// least what 1F1B's holds, every other input alike.
TEST(MemoryBound, GpipeAndZbH1HoldAtLeastWhat1F1BHolds) {
  std::mt19937 rng(47);
  std::uniform_int_distribution<int64_t> bytes(0, 1000);
  int strictly = 0;
  for (int instance = 0; instance < 400; ++instance) {
    PositionFootprint f{.param_bytes = bytes(rng),
                        .grad_bytes = bytes(rng),
                        .optimizer_bytes = bytes(rng),
                        .stash_bytes = bytes(rng),
                        .workspace_bytes = bytes(rng),
                        .layer_param_bytes = bytes(rng) / 4,
                        .layer_grad_bytes = bytes(rng) / 4};
    const int pp = 1 + instance % 5;
    const int replicas = 1 + (instance / 5) % 4;
    MemoryContext one_f_one_b{ScheduleKind::k1F1B,
                              pp,
                              1,
                              1 + instance % 9,
                              replicas,
                              static_cast<DpSharding>(instance % 4),
                              100};
    one_f_one_b.cp = 1 + (instance / 7) % 2;
    if (replicas == 4 && instance % 3 == 0) one_f_one_b.shard_replicas = 2;
    one_f_one_b.fragmentation = 0.05 * (instance % 3);
    for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::kZbH1}) {
      MemoryContext above = one_f_one_b;
      above.schedule = kind;
      for (int position = 0; position < pp; ++position) {
        const int64_t lower = PositionMemory(f, position, one_f_one_b).Total();
        const int64_t total = PositionMemory(f, position, above).Total();
        EXPECT_GE(total, lower) << "instance " << instance << ", position " << position;
        strictly += total > lower ? 1 : 0;
      }
    }
  }
  EXPECT_GT(strictly, 200);
}

}  // namespace
}  // namespace trident
