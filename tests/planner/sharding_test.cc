// Sharded data parallelism: each level's memory per rank (memory_model.h), each collective and
// its exposure (sharding_comm.h) and each step term of the evaluation (evaluate.h), on
// hand-computable cases; and the search over levels and shard groups.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include "planner/evaluate.h"
#include "planner/memory_model.h"
#include "planner/search.h"
#include "planner/sharding_comm.h"
#include "planner/stage_costs.h"
#include "planner_fixture.h"

namespace trident {
namespace {

// P 100, G 200, O 800 bytes; the largest layer 10 of parameters and 20 of gradients.
PositionFootprint Footprint() {
  return {.param_bytes = 100,
          .grad_bytes = 200,
          .optimizer_bytes = 800,
          .layer_param_bytes = 10,
          .layer_grad_bytes = 20,
          .grad_transient_bytes = 30,
          .param_transient_bytes = 45};
}

// Two replicas × cp 2: n = 4 ranks share each shard. One stage, 1F1B, nothing else held.
MemoryBreakdown At(DpSharding level, int replicas = 2, int cp = 2, int shard_replicas = 0) {
  MemoryContext c{ScheduleKind::k1F1B, 1, 1, 1, replicas, level, 0};
  c.cp = cp;
  c.shard_replicas = shard_replicas;
  return PositionMemory(Footprint(), 0, c);
}

TEST(ShardingMemory, EachLevelDividesItsStateOverTheShardGroup) {
  const MemoryBreakdown none = At(DpSharding::kNone);
  EXPECT_EQ(none.Total(), 100 + 200 + 800 + 200);  // P + G + O + buckets G
  const MemoryBreakdown optimizer = At(DpSharding::kOptimizer);
  EXPECT_EQ(optimizer.optimizer, 200);     // O / 4
  EXPECT_EQ(optimizer.grad_buckets, 250);  // buckets G + the received chunks G / 4
  EXPECT_EQ(optimizer.Total(), 100 + 200 + 200 + 250);
  const MemoryBreakdown gradients = At(DpSharding::kGradients);
  EXPECT_EQ(gradients.grads, 50);         // G / 4
  EXPECT_EQ(gradients.grad_buckets, 30);  // a layer's gradients and their packed buffer
  EXPECT_EQ(gradients.Total(), 100 + 50 + 200 + 30);
  const MemoryBreakdown full = At(DpSharding::kFull);
  EXPECT_EQ(full.params, 25);           // P / 4
  EXPECT_EQ(full.grad_buckets, 30);     // as gradient sharding's
  EXPECT_EQ(full.gathered_layers, 15);  // what a gathered layer adds above that: 45 - 30
  EXPECT_EQ(full.Total(), 25 + 50 + 200 + 30 + 15);
  EXPECT_THAT(full.ToString(), ::testing::HasSubstr("gathered layers 15 B"));
}

// The optimizer step's traffic over the stepped share (P 100, G 200, O 800, n 4): the norm and
// AdamW read G, AdamW reads and writes O, the parameters are read and written (fp32) or written
// from masters read at twice their bytes, and the held gradients are zeroed.
TEST(ShardingMemory, OptimizerStepMovesTheStepSharesBytes) {
  MemoryContext c{ScheduleKind::k1F1B, 1, 1, 1, 2, DpSharding::kNone, 0};
  c.cp = 2;
  auto bytes = [&](DpSharding level, bool master) {
    c.sharding = level;
    c.master_weights = master;
    return OptimizerStepBytes(Footprint(), PositionMemory(Footprint(), 0, c), c);
  };
  EXPECT_DOUBLE_EQ(bytes(DpSharding::kNone, false), 2 * 200 + 2 * 800 + 2 * 100 + 200);
  EXPECT_DOUBLE_EQ(bytes(DpSharding::kNone, true), 2 * 200 + 2 * 800 + 3 * 100 + 200);
  // Optimizer sharding steps a quarter and zeroes every gradient it holds; gradient sharding
  // holds a quarter of them too.
  EXPECT_DOUBLE_EQ(bytes(DpSharding::kOptimizer, true), 2 * 50 + 2 * 200 + 3 * 25 + 200);
  EXPECT_DOUBLE_EQ(bytes(DpSharding::kGradients, true), 2 * 50 + 2 * 200 + 3 * 25 + 50);
  EXPECT_DOUBLE_EQ(bytes(DpSharding::kFull, false), 2 * 50 + 2 * 200 + 2 * 25 + 50);
}

// A table tied over two positions keeps its whole gradient and its gather bucket, and under
// full sharding its whole parameters.
TEST(ShardingMemory, GradientShardingKeepsASplitTiesTableWhole) {
  PositionFootprint f = Footprint();
  f.tied_grad_bytes = 40;
  MemoryContext c{ScheduleKind::k1F1B, 1, 1, 1, 2, DpSharding::kGradients, 0};
  c.cp = 2;
  const MemoryBreakdown m = PositionMemory(f, 0, c);
  EXPECT_EQ(m.grads, 50 + 40 - 10);         // G / 4, and the table whole
  EXPECT_EQ(m.grad_buckets, 30 + 40 + 10);  // the transient, and the table's gather bucket
  f.tied_param_bytes = 20;
  c.sharding = DpSharding::kFull;
  const MemoryBreakdown full = PositionMemory(f, 0, c);
  EXPECT_EQ(full.params, 25 + 20 - 5);  // P / 4, and the table's parameters whole
  EXPECT_EQ(full.grads, m.grads);
  EXPECT_EQ(full.grad_buckets, m.grad_buckets);
}

TEST(ShardingMemory, HybridGroupsShardOverTheirOwnReplicasAndRoundUp) {
  EXPECT_EQ(At(DpSharding::kOptimizer, 4, 1, 2).optimizer, 400);  // n = 2 of 4 replicas
  EXPECT_EQ(At(DpSharding::kFull, 3, 1).params, 34);              // ⌈100 / 3⌉
}

TEST(ShardingComm, PerMicroBatchCommunicationIsExposedBeyondTheCompute) {
  ShardingComm comm;
  comm.micro_batch_ms = 3;
  comm.prefetch_ms = 0.5;
  // Four micro-batches of 2 ms: the gradients' three earlier reduce-scatters each 1 ms over,
  // full's four micro-batches each 1 ms over plus the first layer's gather.
  EXPECT_DOUBLE_EQ(ExposedMicroBatchCommMs(DpSharding::kGradients, comm, 4, 2), 3);
  EXPECT_DOUBLE_EQ(ExposedMicroBatchCommMs(DpSharding::kFull, comm, 4, 2), 4.5);
  // Compute of 5 ms hides them all but the first gather.
  EXPECT_DOUBLE_EQ(ExposedMicroBatchCommMs(DpSharding::kGradients, comm, 4, 5), 0);
  EXPECT_DOUBLE_EQ(ExposedMicroBatchCommMs(DpSharding::kFull, comm, 4, 5), 0.5);
  EXPECT_DOUBLE_EQ(ExposedMicroBatchCommMs(DpSharding::kOptimizer, comm, 4, 2), 0);
  EXPECT_DOUBLE_EQ(ExposedMicroBatchCommMs(DpSharding::kNone, comm, 4, 2), 0);
}

TEST(ShardingComm, EachLevelsCollectives) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  const CostModel& costs = *f->costs;
  const PositionFootprint fp{.param_bytes = 1 << 30,
                             .grad_bytes = int64_t{2} << 30,
                             .layer_param_bytes = 1 << 25,
                             .layer_grad_bytes = 1 << 26};
  // A grad group of 16 ranks across nodes, shard groups of 4 inside one.
  const ShardGroupLinks whole{16, 1, 16, 1}, hybrid{16, 1, 4, 0};
  auto at = [&](Collective c, double bytes, int n, int level) {
    return costs.CollectiveMsAtLevel(c, bytes, n, level);
  };
  const double g = 2.0 * (1 << 30), p = 1 << 30;
  EXPECT_DOUBLE_EQ(ShardingCommOf(costs, DpSharding::kNone, fp, whole).sync_ms,
                   at(Collective::kAllReduce, g, 16, 1));
  const ShardingComm optimizer = ShardingCommOf(costs, DpSharding::kOptimizer, fp, whole);
  EXPECT_DOUBLE_EQ(optimizer.sync_ms, at(Collective::kReduceScatter, g, 16, 1));
  EXPECT_DOUBLE_EQ(optimizer.gather_ms, at(Collective::kAllGather, p, 16, 1));
  EXPECT_EQ(optimizer.micro_batch_ms, 0);
  const ShardingComm gradients = ShardingCommOf(costs, DpSharding::kGradients, fp, whole);
  EXPECT_DOUBLE_EQ(gradients.micro_batch_ms, at(Collective::kReduceScatter, g, 16, 1));
  EXPECT_DOUBLE_EQ(gradients.gather_ms, optimizer.gather_ms);
  const ShardingComm full = ShardingCommOf(costs, DpSharding::kFull, fp, whole);
  EXPECT_EQ(full.sync_ms, 0);
  EXPECT_EQ(full.gather_ms, 0);
  EXPECT_DOUBLE_EQ(full.micro_batch_ms, 2 * at(Collective::kAllGather, p, 16, 1) +
                                            at(Collective::kReduceScatter, g, 16, 1));
  EXPECT_DOUBLE_EQ(full.prefetch_ms, at(Collective::kAllGather, 1 << 25, 16, 1));
  // Hybrid: the collectives inside the node's group of 4, and the shard's all-reduce over the
  // 4 groups across nodes.
  const ShardingComm hsdp = ShardingCommOf(costs, DpSharding::kFull, fp, hybrid);
  EXPECT_DOUBLE_EQ(hsdp.sync_ms, at(Collective::kAllReduce, g / 4, 4, 1));
  EXPECT_DOUBLE_EQ(hsdp.micro_batch_ms, 2 * at(Collective::kAllGather, p, 4, 0) +
                                            at(Collective::kReduceScatter, g, 4, 0));
  EXPECT_LT(hsdp.micro_batch_ms, full.micro_batch_ms);
}

// The search shares one ShardCollectivesOf at kFull among the sharded levels: each level's
// ShardingComm from it equals ShardingCommOf bit for bit.
TEST(ShardingComm, SharedCollectivesGiveEachLevelsCommExactly) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  const CostModel& costs = *f->costs;
  const PositionFootprint fp{.param_bytes = 3 << 28,
                             .grad_bytes = int64_t{5} << 28,
                             .layer_param_bytes = 7 << 22,
                             .layer_grad_bytes = 1 << 26};
  for (const ShardGroupLinks& links :
       {ShardGroupLinks{16, 1, 16, 1}, ShardGroupLinks{16, 1, 4, 0}, ShardGroupLinks{6, 0, 3, 0}}) {
    const ShardCollectives none = ShardCollectivesOf(costs, DpSharding::kNone, fp, links);
    const ShardCollectives sharded = ShardCollectivesOf(costs, DpSharding::kFull, fp, links);
    for (DpSharding level :
         {DpSharding::kNone, DpSharding::kOptimizer, DpSharding::kGradients, DpSharding::kFull}) {
      const ShardingComm expected = ShardingCommOf(costs, level, fp, links);
      const ShardingComm shared =
          ShardingCommFrom(level, level == DpSharding::kNone ? none : sharded);
      EXPECT_EQ(shared.sync_ms, expected.sync_ms);
      EXPECT_EQ(shared.gather_ms, expected.gather_ms);
      EXPECT_EQ(shared.micro_batch_ms, expected.micro_batch_ms);
      EXPECT_EQ(shared.prefetch_ms, expected.prefetch_ms);
      EXPECT_GT(shared.sync_ms + shared.gather_ms + shared.micro_batch_ms, 0);
    }
  }
}

// DataParallelLowerBoundMs, which lets the search skip a configuration's DP, against every cut
// of random layers into 1 to 3 positions, at every level, with and without PipeDream: no cut's
// DataParallelMs is below it.
TEST(ShardingComm, NoCutCommunicatesLessThanTheFirstLayersBound) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  std::mt19937 rng(23);
  std::uniform_int_distribution<int64_t> bytes(1, int64_t{1} << 30);
  std::uniform_real_distribution<double> ms(0, 200);
  const DpSharding levels[] = {DpSharding::kNone, DpSharding::kOptimizer, DpSharding::kGradients,
                               DpSharding::kFull};
  int checked = 0;
  for (int instance = 0; instance < 40; ++instance) {
    const int n = 2 + instance % 5;
    std::vector<PositionFootprint> layers(n);
    std::vector<double> compute(n);
    for (int i = 0; i < n; ++i) {
      layers[i].param_bytes = layers[i].layer_param_bytes = bytes(rng);
      layers[i].grad_bytes = layers[i].layer_grad_bytes = bytes(rng);
      compute[i] = ms(rng);
    }
    // Position p's grad group of 8 ranks, across nodes for odd p; shard groups of 2 or 8.
    auto links = [&](int p) {
      return ShardGroupLinks{8, p % 2, instance % 2 == 0 ? 2 : 8, instance % 2 == 0 ? 0 : p % 2};
    };
    for (int pp = 1; pp <= std::min(3, n); ++pp) {
      // Every cut: cut[k] is the first layer of position k + 1.
      std::vector<int> cut(pp - 1);
      for (int k = 0; k + 1 < pp; ++k) cut[k] = k + 1;
      while (true) {
        std::vector<PositionComm> positions(pp);
        for (int p = 0, layer = 0; p < pp; ++p) {
          const int end = p + 1 < pp ? cut[p] : n;
          for (; layer < end; ++layer) {
            PositionFootprint& sum = positions[p].footprint;
            sum.param_bytes += layers[layer].param_bytes;
            sum.grad_bytes += layers[layer].grad_bytes;
            sum.layer_param_bytes = std::max(sum.layer_param_bytes, layers[layer].param_bytes);
            positions[p].compute_ms += compute[layer];
          }
          positions[p].links = links(p);
        }
        for (DpSharding level : levels) {
          for (bool pipedream : {false, true}) {
            const int lane = 1 + instance % 4;
            EXPECT_GE(DataParallelMs(*f->costs, level, pipedream, lane, positions),
                      DataParallelLowerBoundMs(*f->costs, level, pipedream, layers[0], links(0)))
                << "instance " << instance;
            ++checked;
          }
        }
        // The next cut, the last position's start moving first.
        int k = pp - 2;
        while (k >= 0 && cut[k] == n - (pp - 1 - k)) --k;
        if (k < 0) break;
        ++cut[k];
        for (int j = k + 1; j + 1 < pp; ++j) cut[j] = cut[j - 1] + 1;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// The fixture's whole model in one stage on tp 8, `replicas` replicas of `lane` micro-batches.
Plan OneStage(const PlannerFixture& f, int replicas, int lane, DpSharding level,
              int64_t seq = 8192) {
  Plan plan;
  plan.model = f.model;
  plan.cluster = f.cluster.name;
  plan.devices_per_node = 8;
  plan.seq_len = seq;
  plan.dtype = DType::kBf16;
  plan.micro_batch_size = 1;
  plan.num_micro_batches = replicas * lane;
  plan.global_batch = replicas * lane;
  plan.stages = {{0, f.model.NumLayers(), replicas, RecomputeMode::kNone, 0, 0}};
  plan.mesh = {replicas, 1, 8, 1};
  plan.devices = 8 * replicas;
  plan.dp_sharding = level;
  EXPECT_TRUE(plan.Validate().ok()) << plan.Validate().ToString();
  return plan;
}

// For every range of gpt-tiny's layers, under no and full recompute: the range query `got`
// equals the most `one(costs, layer, last)` gives over the range's layers.
void ExpectLayerByLayerMaximum(
    const std::function<int64_t(const PositionFootprint&)>& got,
    const std::function<int64_t(const StageCosts&, int layer, int last)>& one) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 32, DType::kFp32);
  for (RecomputeMode mode : {RecomputeMode::kNone, RecomputeMode::kFull}) {
    const StageCosts costs = *StageCosts::Create(*f->costs, 1, 1, false, 1, mode);
    for (int first = 0; first < costs.NumLayers(); ++first) {
      for (int last = first; last < costs.NumLayers(); ++last) {
        int64_t want = 0;
        for (int layer = first; layer <= last; ++layer) {
          want = std::max(want, one(costs, layer, last));
        }
        ASSERT_EQ(got(costs.Footprint(first, last)), want) << "layers " << first << "-" << last;
      }
    }
  }
}

// The range query of gradient sharding's transient equals its definition, layer by layer: the
// most 2 · a layer's gradients exceed the stash that layer and the later ones of the range free.
TEST(ShardingMemory, GradientTransientIsTheLayerByLayerMaximum) {
  ExpectLayerByLayerMaximum([](const PositionFootprint& f) { return f.grad_transient_bytes; },
                            [](const StageCosts& costs, int layer, int last) {
                              const int64_t freed = costs.Footprint(layer, last).stash_bytes;
                              return 2 * costs.Footprint(layer, layer).grad_bytes - freed;
                            });
}

// The same for full sharding's parameter gather: the most 2 · a layer's parameters exceed the
// stash that the later layers of the range free (the layer's own is still held).
TEST(ShardingMemory, ParameterTransientIsTheLayerByLayerMaximum) {
  ExpectLayerByLayerMaximum([](const PositionFootprint& f) { return f.param_transient_bytes; },
                            [](const StageCosts& costs, int layer, int last) {
                              const int64_t freed =
                                  layer < last ? costs.Footprint(layer + 1, last).stash_bytes : 0;
                              return 2 * costs.Footprint(layer, layer).param_bytes - freed;
                            });
}

struct Inputs {
  double params, grads, layer_params, compute;
};

Inputs InputsOf(const PlannerFixture& f) {
  const StageCosts costs = *StageCosts::Create(*f.costs, 1, 8, false, 1, RecomputeMode::kNone);
  const int last = f.model.NumLayers() - 1;
  const PositionFootprint fp = costs.Footprint(0, last);
  return {static_cast<double>(fp.param_bytes), static_cast<double>(fp.grad_bytes),
          static_cast<double>(fp.layer_param_bytes), costs.Times(0, last).Total()};
}

double StepSum(const Evaluation& ev) {
  return ev.makespan_ms + ev.exposed_sync_ms + ev.optimizer_ms + ev.param_gather_ms +
         ev.grad_scatter_ms + ev.layer_comm_ms;
}

// Llama 3 8B on two DGX H100 nodes (tp 8, dp 2), 4 micro-batches a replica: ZeRO-2's three
// earlier reduce-scatters each cost what the micro-batch's compute does not hide, which at
// sequence 1,024 is most of them and at 8,192 none.
TEST(ShardingEvaluate, GradientsPayTheEarlierMicroBatchesReduceScatters) {
  for (int64_t seq : {1024, 8192}) {
    auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", seq, DType::kBf16);
    const Evaluation ev =
        *EvaluatePlan(*f->costs, OneStage(*f, 2, 4, DpSharding::kGradients, seq), {});
    const Inputs in = InputsOf(*f);
    const double scatter =
        f->costs->CollectiveMsAtLevel(Collective::kReduceScatter, in.grads, 2, 1);
    EXPECT_DOUBLE_EQ(ev.grad_scatter_ms, 3 * std::max(0.0, scatter - in.compute));
    EXPECT_EQ(ev.grad_scatter_ms > 0, seq == 1024) << seq;
    EXPECT_DOUBLE_EQ(ev.sync_ms, scatter);
    EXPECT_DOUBLE_EQ(ev.param_gather_ms,
                     f->costs->CollectiveMsAtLevel(Collective::kAllGather, in.params, 2, 1));
    EXPECT_EQ(ev.layer_comm_ms, 0);
    EXPECT_DOUBLE_EQ(ev.step_ms, StepSum(ev));
  }
}

// The same under full sharding: every micro-batch gathers the parameters twice and
// reduce-scatters the gradients, beyond its compute, and the first layer's gather is exposed;
// no all-gather after the step.
TEST(ShardingEvaluate, FullPaysEveryMicroBatchsGathersBeyondItsCompute) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  const Evaluation ev = *EvaluatePlan(*f->costs, OneStage(*f, 2, 4, DpSharding::kFull), {});
  const Inputs in = InputsOf(*f);
  const CostModel& c = *f->costs;
  const double per_micro_batch =
      2 * c.CollectiveMsAtLevel(Collective::kAllGather, in.params, 2, 1) +
      c.CollectiveMsAtLevel(Collective::kReduceScatter, in.grads, 2, 1);
  const double first = c.CollectiveMsAtLevel(Collective::kAllGather, in.layer_params, 2, 1);
  EXPECT_DOUBLE_EQ(ev.layer_comm_ms, 4 * std::max(0.0, per_micro_batch - in.compute) + first);
  EXPECT_GT(ev.layer_comm_ms, 0);
  EXPECT_EQ(ev.param_gather_ms, 0);
  EXPECT_EQ(ev.grad_scatter_ms, 0);
  EXPECT_EQ(ev.sync_ms, 0);
  EXPECT_DOUBLE_EQ(ev.step_ms, StepSum(ev));
  // And it holds the least memory of the levels.
  const Evaluation none = *EvaluatePlan(c, OneStage(*f, 2, 4, DpSharding::kNone), {});
  EXPECT_LT(ev.peak_memory_bytes, none.peak_memory_bytes);
}

// The search over every level is the best of the searches each fixed to one level, and never
// shards with dp 1; hybrid plans are uniform. Every partition is simulated (rerank beyond the
// pool), as in Search.BestOverCpIsTheBestOfEachFixedCp.
TEST(ShardingSearch, BestOverLevelsIsTheBestOfEachFixedLevel) {
  const std::vector<DpSharding> all = {DpSharding::kNone, DpSharding::kOptimizer,
                                       DpSharding::kGradients, DpSharding::kFull};
  for (const SmallSearch& k : kSmallSearches) {
    auto f = k.Load();
    SearchRequest request = f->Request(k.devices, k.global_batch);
    request.rerank = 1 << 20;
    request.runners_up = 1 << 20;
    request.constraints.dp_sharding = all;
    StatusOr<SearchResult> every = SearchPlans(*f->costs, request);
    ASSERT_TRUE(every.ok()) << every.status().ToString();
    for (const Candidate& c : every->ranked) {
      EXPECT_TRUE(c.plan.dp_sharding == DpSharding::kNone || c.plan.mesh.dp > 1);
      EXPECT_TRUE(c.plan.Check() == std::nullopt) << k.model;
    }
    double best_ms = std::numeric_limits<double>::infinity();
    DpSharding best_level = DpSharding::kNone;
    for (DpSharding level : all) {
      SearchRequest r = request;
      r.runners_up = 0;
      r.constraints.dp_sharding = {level};
      StatusOr<SearchResult> fixed = SearchPlans(*f->costs, r);
      if (!fixed.ok()) continue;
      EXPECT_EQ(fixed->ranked.front().plan.dp_sharding, level);
      if (fixed->ranked.front().evaluation.step_ms >= best_ms) continue;
      best_ms = fixed->ranked.front().evaluation.step_ms;
      best_level = level;
    }
    EXPECT_DOUBLE_EQ(every->ranked.front().evaluation.step_ms, best_ms) << k.model;
    EXPECT_EQ(every->ranked.front().plan.dp_sharding, best_level) << k.model;
  }
}

// --fix dp_shard=N: every plan shards in groups of N replicas (0 in the file's field when N is
// the whole dp); shard groups that do not divide dp give no plan.
TEST(ShardingSearch, AFixedShardGroupIsHonoured) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  SearchRequest r = f->Request(32, 256);
  r.constraints.dp_sharding = {DpSharding::kNone, DpSharding::kFull};
  r.constraints.dp = 8;
  r.constraints.dp_shard = 2;
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const Candidate& c : result->ranked) {
    EXPECT_EQ(c.plan.dp_sharding, DpSharding::kFull);
    EXPECT_EQ(c.plan.dp_shard, 2);
    EXPECT_EQ(c.plan.ShardReplicas(0), 2);
  }
  r.constraints.dp_shard = 3;
  EXPECT_FALSE(SearchPlans(*f->costs, r).ok());
}

}  // namespace
}  // namespace trident
