// The outer search: constraints are honoured, results are deterministic and valid, the
// closed-form memory rule matches the simulator, and impossible requests say why.
#include "planner/search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "core/schedule.h"
#include "planner/memory_model.h"
#include "planner/stage_costs.h"
#include "planner_fixture.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

TEST(Search, BestPlanIsValidAndFits) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  StatusOr<SearchResult> result = SearchPlans(*f->costs, f->Request(64, 512));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_FALSE(result->ranked.empty());
  for (const Candidate& c : result->ranked) {
    EXPECT_TRUE(c.plan.Validate().ok()) << c.plan.Validate().ToString();
    EXPECT_TRUE(c.evaluation.Fits());
    EXPECT_GT(c.plan.predicted.step_time_ms, 0);
    EXPECT_LE(result->ranked.front().evaluation.step_ms, c.evaluation.step_ms);
  }
  EXPECT_LE(result->ranked.size(), 6u);
}

TEST(Search, IsDeterministic) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  StatusOr<SearchResult> a = SearchPlans(*f->costs, f->Request(32, 256));
  StatusOr<SearchResult> b = SearchPlans(*f->costs, f->Request(32, 256));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->ranked.size(), b->ranked.size());
  for (size_t i = 0; i < a->ranked.size(); ++i) EXPECT_EQ(a->ranked[i].plan, b->ranked[i].plan);
}

TEST(Search, HonoursConstraints) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  SearchRequest r = f->Request(64, 512);
  r.constraints.tp = 2;
  r.constraints.pp = 4;
  r.constraints.dp = 8;
  r.constraints.schedules = {ScheduleKind::kGpipe};
  r.constraints.recompute = {RecomputeMode::kFull};
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const Candidate& c : result->ranked) {
    EXPECT_EQ(c.plan.mesh, (Mesh{8, 4, 2}));
    EXPECT_EQ(c.plan.schedule, ScheduleKind::kGpipe);
    for (const PlanStage& s : c.plan.stages) EXPECT_EQ(s.recompute, RecomputeMode::kFull);
  }
}

// --sequence-parallel on and off: every plan with tp > 1 has it, or none has.
TEST(Search, HonoursTheSequenceParallelChoice) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  for (bool sp : {false, true}) {
    SearchRequest r = f->Request(64, 512);
    r.constraints.sequence_parallel = sp;
    StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    for (const Candidate& c : result->ranked) {
      EXPECT_EQ(c.plan.sequence_parallel, sp && c.plan.mesh.tp > 1) << c.plan.ToString();
    }
  }
}

// --fix cp: every plan has that cp, and its devices are dp · pp · cp · tp.
TEST(Search, HonoursTheContextParallelChoice) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  for (int cp : {1, 2, 4}) {
    SearchRequest r = f->Request(64, 64);
    r.constraints.cp = cp;
    StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    for (const Candidate& c : result->ranked) {
      EXPECT_EQ(c.plan.mesh.cp, cp) << c.plan.ToString();
      EXPECT_TRUE(c.plan.Validate().ok()) << c.plan.Validate().ToString();
    }
  }
}

// The search over every cp finds what the best of the searches with cp fixed finds: cp is
// enumerated like the other degrees, and its memory bounds lose no plan. Every partition the
// DP chooses is simulated (rerank beyond the pool), so the closed-form estimate's ranking,
// which differs with the pool, plays no part.
TEST(Search, BestOverCpIsTheBestOfEachFixedCp) {
  for (const SmallSearch& k : kSmallSearches) {
    auto f = k.Load();
    SearchRequest request = f->Request(k.devices, k.global_batch);
    request.rerank = 1 << 20;
    request.runners_up = 0;
    StatusOr<SearchResult> all = SearchPlans(*f->costs, request);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    double best_ms = std::numeric_limits<double>::infinity();
    int best_cp = 0;
    for (int cp : f->costs->ContextParallelDegrees()) {
      SearchRequest r = request;
      r.constraints.cp = cp;
      StatusOr<SearchResult> fixed = SearchPlans(*f->costs, r);
      if (!fixed.ok() || fixed->ranked.front().evaluation.step_ms >= best_ms) continue;
      best_ms = fixed->ranked.front().evaluation.step_ms;
      best_cp = cp;
    }
    EXPECT_DOUBLE_EQ(all->ranked.front().evaluation.step_ms, best_ms) << k.model;
    EXPECT_EQ(all->ranked.front().plan.mesh.cp, best_cp) << k.model;
  }
}

// Llama 3 405B at 128K tokens (Dubey et al. 2024 §3.3.2: 16M tokens a step, cp 16): the search
// chooses cp > 1 and fits; without context parallelism only 128 replicas of one micro-batch
// each fit, all pipeline fill and drain, many times slower.
TEST(Search, LongContextChoosesContextParallelism) {
  auto f = LoadPlannerFixture("llama3-405b", "dgx-h100", 131072, DType::kBf16);
  SearchRequest r = f->Request(16384, 128);
  r.runners_up = 0;
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Candidate& best = result->ranked.front();
  EXPECT_GT(best.plan.mesh.cp, 1);
  EXPECT_TRUE(best.evaluation.Fits());
  r.constraints.cp = 1;
  StatusOr<SearchResult> without = SearchPlans(*f->costs, r);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_GT(without->ranked.front().evaluation.step_ms, 5 * best.evaluation.step_ms);
}

// Under flash attention selective recompute keeps and costs what no recompute does, so the
// search leaves it out: asking for it too finds the same best step.
TEST(Search, FlashAttentionLeavesSelectiveRecomputeOut) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  ASSERT_EQ(f->model.attention, AttentionKind::kFlash);
  const int last = f->model.NumLayers() - 1;
  for (int tp : {1, 8}) {
    auto none = StageCosts::Create(*f->costs, 1, tp, false, 1, RecomputeMode::kNone);
    auto selective = StageCosts::Create(*f->costs, 1, tp, false, 1, RecomputeMode::kSelective);
    ASSERT_TRUE(none.ok() && selective.ok());
    EXPECT_EQ(none->Times(0, last).Total(), selective->Times(0, last).Total()) << tp;
    EXPECT_EQ(none->Footprint(0, last).stash_bytes, selective->Footprint(0, last).stash_bytes);
  }
  SearchRequest r = f->Request(16, 64);
  StatusOr<SearchResult> fewer = SearchPlans(*f->costs, r);
  r.constraints.recompute = {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
  StatusOr<SearchResult> all = SearchPlans(*f->costs, r);
  ASSERT_TRUE(fewer.ok() && all.ok());
  EXPECT_DOUBLE_EQ(fewer->ranked.front().evaluation.step_ms,
                   all->ranked.front().evaluation.step_ms);
  for (const Candidate& c : fewer->ranked) {
    EXPECT_NE(c.plan.stages.front().recompute, RecomputeMode::kSelective);
  }
}

// The same plan with sequence parallelism: its blocks keep 1/t of the residual stream, so every
// stage needs less memory; and the evaluation reads the plan's field (its costs differ).
TEST(Search, SequenceParallelShrinksEveryStagesActivations) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  SearchRequest r = f->Request(64, 512);
  r.constraints.tp = 8;
  r.constraints.pp = 8;
  r.constraints.micro_batch = 1;
  r.constraints.recompute = {RecomputeMode::kNone};
  r.constraints.schedules = {ScheduleKind::k1F1B};
  r.constraints.sequence_parallel = false;
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  Plan plan = result->ranked.front().plan;
  StatusOr<Evaluation> whole = EvaluatePlan(*f->costs, plan, {});
  plan.sequence_parallel = true;
  StatusOr<Evaluation> split = EvaluatePlan(*f->costs, plan, {});
  ASSERT_TRUE(whole.ok() && split.ok());
  ASSERT_EQ(whole->memory.size(), split->memory.size());
  for (size_t p = 0; p < whole->memory.size(); ++p) {
    EXPECT_LT(split->memory[p].activations, whole->memory[p].activations) << p;
  }
  EXPECT_LT(split->peak_memory_bytes, whole->peak_memory_bytes);
}

TEST(Search, ExplicitCutsAreOnlyEvaluated) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  SearchRequest r = f->Request(2, 8);
  r.constraints.cuts = {0, 3};
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const Candidate& c : result->ranked) {
    ASSERT_EQ(c.plan.stages.size(), 2u);
    EXPECT_EQ(c.plan.stages[1].first_layer, 3);
  }
}

// Two pipeline stages on three devices can only be PipeDream-style: one stage replicated twice.
TEST(Search, FindsPerStageReplicationWhenPpDoesNotDivideTheDevices) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  f->cluster.devices_per_node = 3;
  SearchRequest r = f->Request(3, 12);
  r.constraints.pp = 2;
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Plan& best = result->ranked.front().plan;
  EXPECT_TRUE(best.Validate().ok()) << best.Validate().ToString();
  EXPECT_EQ(best.stages[0].replicas + best.stages[1].replicas, 3);
  EXPECT_EQ(best.mesh.dp, 2);
}

// --replicas fixes each stage's replicas; the search chooses the cuts (as PartitionWithReplicas
// does) and everything else. Equal counts are a mesh; bad vectors are refused with the flag.
TEST(Search, FixedReplicasAreHonoured) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  f->cluster.devices_per_node = 4;
  SearchRequest r = f->Request(4, 12);
  r.constraints.replicas = {3, 1};
  StatusOr<SearchResult> result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const Candidate& c : result->ranked) {
    EXPECT_TRUE(c.plan.Validate().ok()) << c.plan.Validate().ToString();
    ASSERT_EQ(c.plan.stages.size(), 2u);
    EXPECT_EQ(c.plan.stages[0].replicas, 3);
    EXPECT_EQ(c.plan.stages[1].replicas, 1);
  }
  r.constraints.replicas = {2, 2};
  result = SearchPlans(*f->costs, r);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->ranked.front().plan.mesh.dp, 2);
  EXPECT_EQ(result->ranked.front().plan.mesh.pp, 2);
  r.constraints.replicas = {3, 2};
  EXPECT_THAT(SearchPlans(*f->costs, r).status().message(),
              HasSubstr("--replicas sums to 5 replicas, more than the 4 devices"));
  r.constraints.replicas = {3, 0};
  EXPECT_THAT(SearchPlans(*f->costs, r).status().message(),
              HasSubstr("--replicas: stage 1 has 0 replicas"));
  r.constraints.replicas = {3, 1};
  r.constraints.pp = 4;
  EXPECT_THAT(SearchPlans(*f->costs, r).status().message(),
              HasSubstr("--replicas gives 2 stages but --fix pp=4"));
}

TEST(Search, ModelThatFitsNowhereReportsTheShortfall) {
  auto f = LoadPlannerFixture("gpt3-175b", "dgx-a100-80gb", 2048, DType::kBf16);
  StatusOr<SearchResult> result = SearchPlans(*f->costs, f->Request(8, 64));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInfeasible);
  EXPECT_THAT(result.status().message(), HasSubstr("fits nowhere on 8 devices with 80.00 GiB"));
  EXPECT_THAT(result.status().message(), HasSubstr("more; try --devices"));
}

TEST(Search, ImpossibleRequestsSayWhy) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  EXPECT_THAT(SearchPlans(*f->costs, f->Request(3, 8)).status().message(),
              HasSubstr("has 2 devices"));
  SearchRequest r = f->Request(2, 7);  // 7 sequences cannot split over 2 replicas...
  r.constraints.dp = 2;                // ...when dp is fixed at 2
  EXPECT_THAT(SearchPlans(*f->costs, r).status().message(), HasSubstr("no configuration"));
}

// The memory model's closed form for live activations agrees with what the simulator counts
// when it replays each schedule.
TEST(MemoryModel, LiveActivationsMatchTheSimulator) {
  const ScheduleKind kinds[] = {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1,
                                ScheduleKind::kInterleaved1F1B};
  for (ScheduleKind kind : kinds) {
    for (int pp : {2, 4}) {
      for (int m : {4, 8}) {
        int v = kind == ScheduleKind::kInterleaved1F1B ? 2 : 1;
        StatusOr<Schedule> schedule = GenerateSchedule(kind, pp, v, m);
        ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
        SimulationInput input;
        input.schedule = &*schedule;
        input.stages.assign(pp * v, {1, 2, kind == ScheduleKind::kZbH1 ? 1.0 : 0.0});
        input.send_activation_ms.assign(pp * v - 1, 0);
        StatusOr<SimulationResult> sim = Simulate(input);
        ASSERT_TRUE(sim.ok()) << sim.status().ToString();
        for (int p = 0; p < pp; ++p) {
          double factor = LiveActivationFactor(kind, p, pp, m, v);
          EXPECT_DOUBLE_EQ(factor * v, sim->lanes[p].peak_live_activations)
              << NameOf(ScheduleKindNames(), kind) << " pp " << pp << " m " << m << " p " << p;
        }
      }
    }
  }
}

TEST(MemoryModel, ZeroOneShardsOptimizerStateOverReplicas) {
  PositionFootprint f{.param_bytes = 100,
                      .grad_bytes = 200,
                      .optimizer_bytes = 800,
                      .stash_bytes = 10,
                      .workspace_bytes = 5};
  MemoryContext c{ScheduleKind::k1F1B, 4, 1, 8, 4, DpSharding::kOptimizer, 1000};
  MemoryBreakdown m = PositionMemory(f, 1, c);
  EXPECT_EQ(m.optimizer, 200);
  EXPECT_EQ(m.activations, 30);         // 1F1B position 1 of 4 holds 3 micro-batches
  EXPECT_EQ(m.grad_buckets, 200 + 50);  // the buckets G and the received chunks G / 4
  EXPECT_EQ(m.Total(), 100 + 200 + 200 + 250 + 30 + 5 + 1000);
}

// The allocator's fragmentation holds a share of the activations on top of them (rounded up),
// and the breakdown names it.
TEST(MemoryModel, FragmentationHoldsAShareOfTheActivations) {
  PositionFootprint f{.param_bytes = 100, .stash_bytes = 10};
  MemoryContext c{ScheduleKind::k1F1B, 4, 1, 8, 1, DpSharding::kNone, 1000};
  c.fragmentation = 0.25;
  MemoryBreakdown m = PositionMemory(f, 0, c);
  EXPECT_EQ(m.activations, 40);  // 1F1B position 0 of 4 holds 4 micro-batches
  EXPECT_EQ(m.fragmentation, 10);
  EXPECT_EQ(m.Total(), 100 + 40 + 10 + 1000);
  EXPECT_THAT(m.ToString(), HasSubstr("fragmentation 10 B"));
}

// Replicas pack their gradients into flat buffers for the all-reduce, all but a tied table
// split over two positions; a position without replicas packs nothing.
TEST(MemoryModel, ReplicasHoldGradientBuckets) {
  PositionFootprint f{.param_bytes = 100, .grad_bytes = 200, .tied_grad_bytes = 50};
  MemoryContext c{ScheduleKind::k1F1B, 2, 1, 8, 2, DpSharding::kNone, 0};
  EXPECT_EQ(PositionMemory(f, 0, c).grad_buckets, 150);
  EXPECT_THAT(PositionMemory(f, 0, c).ToString(), HasSubstr("gradient buckets"));
  c.replicas = 1;
  EXPECT_EQ(PositionMemory(f, 0, c).grad_buckets, 0);
  EXPECT_THAT(PositionMemory(f, 0, c).ToString(), ::testing::Not(HasSubstr("gradient buckets")));
}

// A stage's stash and workspace are those of its recompute mode, the workspace its largest
// layer's.
TEST(StageCosts, RecomputeModeChoosesTheStashAndTheWorkspace) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  for (LayerProfile& layer : f->profile.layers) {
    for (ProfileEntry& e : layer.entries) {
      e.workspace_none_bytes = 100;
      e.workspace_selective_bytes = 200;
      e.workspace_full_bytes = layer.kind == LayerKind::kGptBlock ? 300 : 100;
    }
  }
  ProfileCostModel costs(f->profile, f->cluster);
  const ProfileEntry& block = *costs.Layer(1, 2, 1, false, 1);
  for (RecomputeMode mode :
       {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull}) {
    StatusOr<StageCosts> stage = StageCosts::Create(costs, 2, 1, false, 1, mode);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    PositionFootprint footprint = stage->Footprint(1, 2);
    EXPECT_EQ(footprint.workspace_bytes, block.WorkspaceBytes(mode));
    EXPECT_EQ(footprint.stash_bytes, 2 * block.StashedBytes(mode));
  }
  EXPECT_EQ(block.WorkspaceBytes(RecomputeMode::kFull), 300);
  EXPECT_EQ(block.StashedBytes(RecomputeMode::kSelective), block.stashed_selective_bytes);
}

// PipeDream updates after every backward: m / r optimizer steps a step, each after an unhidden
// all-reduce of the replicas' gradients, where a flushing schedule takes one.
TEST(Evaluate, PipeDreamPaysAnUpdatePerMicroBatchGroup) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  SearchRequest request = f->Request(2, 16);
  request.constraints.schedules = {ScheduleKind::k1F1B};
  StatusOr<SearchResult> result = SearchPlans(*f->costs, request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  Plan flushed = result->ranked.front().plan;
  Plan async = flushed;
  async.model.tied_embeddings = false;
  flushed.model.tied_embeddings = false;
  async.schedule = ScheduleKind::kPipeDream;
  StatusOr<Evaluation> a = EvaluatePlan(*f->costs, async, {});
  StatusOr<Evaluation> b = EvaluatePlan(*f->costs, flushed, {});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const int updates = flushed.num_micro_batches / flushed.stages.front().replicas;
  ASSERT_GT(updates, 1);
  EXPECT_NEAR(a->optimizer_ms, updates * b->optimizer_ms, 1e-9);
}

}  // namespace
}  // namespace trident
