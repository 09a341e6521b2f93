// trident plan --baseline (planner/baseline.h): the choices that differ, the comparison line,
// and a baseline of another job refused naming what differs.
#include "planner/baseline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner_fixture.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

// A plan of gpt-tiny's 5 layers on 4 devices: tp × pp × dp with even cuts.
Plan Shaped(int tp, int pp, int dp, ScheduleKind schedule = ScheduleKind::k1F1B) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  Plan p;
  p.model = f->model;
  p.devices = tp * pp * dp;
  p.mesh = {dp, pp, tp};
  p.micro_batch_size = 1;
  p.num_micro_batches = 8;
  p.global_batch = 8;
  p.seq_len = 64;
  p.schedule = schedule;
  for (int s = 0; s < pp; ++s) {
    const int first = s * 5 / pp;
    p.stages.push_back({first, (s + 1) * 5 / pp - first, dp, RecomputeMode::kNone, 0, 0});
  }
  return p;
}

TEST(Baseline, NamesTheChoicesThatDiffer) {
  EXPECT_EQ(ChangedChoices(Shaped(1, 2, 2), Shaped(1, 2, 2)), "");
  EXPECT_EQ(ChangedChoices(Shaped(4, 1, 1), Shaped(1, 2, 2, ScheduleKind::kZbH1)),
            "tp 1 instead of 4, pp 2 instead of 1, dp 2 instead of 1, zb_h1 instead of 1f1b");
  Plan other_cuts = Shaped(1, 2, 2);
  other_cuts.stages[0].num_layers = 3;
  other_cuts.stages[1] = {3, 2, 2, RecomputeMode::kSelective, 0, 0};
  other_cuts.dp_sharding = DpSharding::kOptimizer;
  EXPECT_EQ(ChangedChoices(Shaped(1, 2, 2), other_cuts),
            "per-stage recompute instead of recompute none, dp_sharding optimizer instead of "
            "none, other stage cuts");
  Plan hybrid = Shaped(1, 1, 4);
  hybrid.dp_sharding = DpSharding::kFull;
  hybrid.dp_shard = 2;
  EXPECT_EQ(ChangedChoices(Shaped(1, 1, 4), hybrid),
            "dp_sharding full in groups of 2 instead of none");
  Plan replicated = Shaped(1, 2, 2);
  replicated.stages[1].replicas = 1;
  EXPECT_EQ(ChangedChoices(Shaped(1, 2, 2), replicated), "other per-stage replication");
  Plan context = Shaped(1, 2, 1);
  context.mesh.cp = 2;
  EXPECT_EQ(ChangedChoices(Shaped(1, 2, 2), context), "cp 2 instead of 1, dp 1 instead of 2");
}

TEST(Baseline, ComparesStepAndMemory) {
  Evaluation slow, fast;
  slow.step_ms = 2000;
  slow.peak_memory_bytes = int64_t{3} << 30;
  slow.memory_limit_bytes = int64_t{80} << 30;
  fast.step_ms = 1500;
  fast.peak_memory_bytes = int64_t{2} << 30;
  fast.memory_limit_bytes = int64_t{80} << 30;
  EXPECT_EQ(BaselineComparison(Shaped(4, 1, 1), slow, "mine.yaml", Shaped(1, 1, 4), fast),
            "your configuration (mine.yaml): 2.000 s a step, 3.00 GiB peak per rank\n"
            "Trident's plan: 1.500 s a step, 2.00 GiB peak per rank: 25.0% faster, with tp 1 "
            "instead of 4, dp 4 instead of 1\n");
  EXPECT_THAT(BaselineComparison(Shaped(1, 1, 4), fast, "mine.yaml", Shaped(1, 1, 4), fast),
              HasSubstr(": the same choices"));
  slow.memory_limit_bytes = int64_t{2} << 30;
  EXPECT_THAT(BaselineComparison(Shaped(4, 1, 1), slow, "mine.yaml", Shaped(1, 1, 4), fast),
              HasSubstr("3.00 GiB peak per rank -- does not fit in the device's memory\n"));
}

TEST(Baseline, ReplansKeepTheJobAndNarrowTheChoices) {
  Plan plan = Shaped(1, 2, 2, ScheduleKind::kGpipe);
  plan.dp_sharding = DpSharding::kOptimizer;
  const std::vector<SearchRequest> megatron = ReplanRequests(plan, Framework::kMegatron);
  ASSERT_EQ(megatron.size(), 1u);
  const SearchRequest& r = megatron[0];
  EXPECT_EQ(r.model, plan.model);
  EXPECT_EQ(r.devices, 4);
  EXPECT_EQ(r.global_batch, 8);
  EXPECT_EQ(r.seq_len, 64);
  EXPECT_EQ(r.constraints.schedules,
            (std::vector<ScheduleKind>{ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B}));
  EXPECT_FALSE(r.constraints.replicate_stages);
  // The distributed optimizer or none, whatever the plan's level; no hybrid groups.
  const std::vector<DpSharding> zero01 = {DpSharding::kNone, DpSharding::kOptimizer};
  EXPECT_EQ(r.constraints.dp_sharding, zero01);
  EXPECT_FALSE(r.constraints.hybrid);
  // DeepSpeed: 1F1B, no selective recompute, and tensor parallelism only without a pipeline;
  // ZeRO stages 2 and 3 only without a pipeline.
  const std::vector<SearchRequest> deepspeed = ReplanRequests(plan, Framework::kDeepSpeed);
  ASSERT_EQ(deepspeed.size(), 2u);
  EXPECT_EQ(deepspeed[0].constraints.tp, 1);
  EXPECT_EQ(deepspeed[0].constraints.dp_sharding, zero01);
  EXPECT_EQ(deepspeed[1].constraints.pp, 1);
  EXPECT_EQ(deepspeed[1].constraints.dp_sharding,
            (std::vector<DpSharding>{DpSharding::kNone, DpSharding::kOptimizer,
                                     DpSharding::kGradients, DpSharding::kFull}));
  for (const SearchRequest& d : deepspeed) {
    EXPECT_FALSE(d.constraints.hybrid);
    EXPECT_EQ(d.constraints.schedules, std::vector<ScheduleKind>{ScheduleKind::k1F1B});
    EXPECT_EQ(d.constraints.recompute,
              (std::vector<RecomputeMode>{RecomputeMode::kNone, RecomputeMode::kFull}));
    EXPECT_EQ(d.constraints.max_virtual_stages, 1);
    EXPECT_FALSE(d.constraints.replicate_stages);
  }
}

// torchtitan: data parallelism alone unsharded, or FSDP (any shard groups) with tp and pp; in
// fp32 also tp and pp without data parallelism.
TEST(Baseline, TorchtitanReplansDataParallelOrFsdp) {
  Plan plan = Shaped(1, 2, 2, ScheduleKind::kGpipe);
  plan.dtype = DType::kBf16;
  const std::vector<SearchRequest> bf16 = ReplanRequests(plan, Framework::kTorchtitan);
  ASSERT_EQ(bf16.size(), 2u);
  EXPECT_EQ(bf16[0].constraints.tp, 1);
  EXPECT_EQ(bf16[0].constraints.pp, 1);
  EXPECT_EQ(bf16[0].constraints.dp_sharding, std::vector<DpSharding>{DpSharding::kNone});
  EXPECT_FALSE(bf16[1].constraints.tp.has_value());
  EXPECT_EQ(bf16[1].constraints.dp_sharding, std::vector<DpSharding>{DpSharding::kFull});
  EXPECT_TRUE(bf16[1].constraints.hybrid);
  plan.dtype = DType::kFp32;
  const std::vector<SearchRequest> fp32 = ReplanRequests(plan, Framework::kTorchtitan);
  ASSERT_EQ(fp32.size(), 3u);
  EXPECT_EQ(fp32[2].constraints.dp, 1);
  EXPECT_EQ(fp32[2].constraints.dp_sharding, std::vector<DpSharding>{DpSharding::kNone});
}

TEST(Baseline, AnotherJobIsRefusedNamingWhatDiffers) {
  SearchRequest request;
  request.model = Shaped(1, 1, 4).model;
  request.devices = 4;
  request.global_batch = 8;
  request.seq_len = 64;
  request.dtype = DType::kFp32;
  EXPECT_TRUE(CheckBaselineMatches(Shaped(1, 1, 4), "mine.yaml", request).ok());
  request.global_batch = 16;
  EXPECT_EQ(CheckBaselineMatches(Shaped(1, 1, 4), "mine.yaml", request).message(),
            "--baseline mine.yaml: has global batch 8, but the search is for 16; compare plans "
            "of one job");
}

}  // namespace
}  // namespace trident
