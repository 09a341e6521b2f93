// Optimizer, gradient and parameter sharding (Plan::dp_sharding optimizer, gradients and full,
// runtime/train/dp_shard.h) over in-process ranks: each layout trains 20 steps with and without
// sharding, and each sharded run's losses and gradient norms equal the unsharded run's (1e-5
// relative) under AdamW with clipping and weight decay and under SGD with momentum; gradient
// sharding lowers rank 0's peak memory below optimizer sharding, and full sharding below
// gradient sharding where the parameters it shards outweigh a gathered layer; a checkpoint
// written under one sharding resumes under another.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/train/dp_shard.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

constexpr int kSteps = 20;
constexpr double kTolerance = 1e-5;

struct ShardCase {
  std::string name;
  PlanShape shape;
  int cp = 1;
  int dp_shard = 0;  // 0: every replica
  bool sequence_parallel = false;
  // Whether full sharding lowers rank 0's peak below gradient sharding: not where the rank's
  // sharded parameters are so few (the split tie's table stays whole) that the chunks it saves
  // weigh less than one layer gathered, whose all-gather buffer and whole tensors coexist.
  bool full_saves = true;
};
void PrintTo(const ShardCase& c, std::ostream* os) { *os << c.name; }

Plan CasePlan(const ShardCase& c, DpSharding level) {
  Plan plan = MakePlan(TinyGpt(), c.shape);
  if (c.cp > 1) {
    plan.mesh.cp = c.cp;
    plan.devices *= c.cp;
    plan.devices_per_node = plan.devices;
  }
  plan.sequence_parallel = c.sequence_parallel;
  plan.dp_sharding = level;
  if (level != DpSharding::kNone) plan.dp_shard = c.dp_shard;
  return plan;
}

TrainOptions AdamW() {
  TrainOptions options = QuietOptions(kSteps);
  options.optimizer.clip_grad_norm = 0.5;
  options.optimizer.weight_decay = 0.1;
  options.optimizer.schedule = {3e-3, 1e-4, 2, kSteps};
  options.bucket_bytes = 8192;  // several buckets a stage
  return options;
}

TrainOptions SgdMomentum() {
  TrainOptions options = QuietOptions(kSteps);
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.momentum = 0.9;
  options.optimizer.schedule.lr = 0.3;
  return options;
}

void ExpectSameSteps(const TrainRun& sharded, const TrainRun& whole) {
  ASSERT_EQ(sharded.ranks.front().steps.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(whole.ranks.front().steps.size(), static_cast<size_t>(kSteps));
  for (int k = 0; k < kSteps; ++k) {
    const StepSummary& got = sharded.ranks.front().steps[k];
    const StepSummary& want = whole.ranks.front().steps[k];
    EXPECT_LE(RelativeError(got.loss, want.loss), kTolerance)
        << "step " << k + 1 << ": loss " << got.loss << " vs " << want.loss;
    EXPECT_LE(RelativeError(got.grad_norm, want.grad_norm), kTolerance)
        << "step " << k + 1 << ": grad norm " << got.grad_norm << " vs " << want.grad_norm;
  }
}

class ShardedTrainerTest : public ::testing::TestWithParam<ShardCase> {};

// Whether every stage's replicas run the same count of micro-batches, which gradient sharding
// needs (Plan::Check refuses it otherwise).
bool EqualLanes(const Plan& plan) {
  for (const PlanStage& stage : plan.stages) {
    if (plan.num_micro_batches % stage.replicas != 0) return false;
  }
  return true;
}

TEST_P(ShardedTrainerTest, SameLossesAsUnshardedUnderAdamWAndSgd) {
  for (const TrainOptions& options : {AdamW(), SgdMomentum()}) {
    TrainRun whole = TrainInProcess(CasePlan(GetParam(), DpSharding::kNone), options);
    ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
    int64_t previous_peak = 0;
    for (DpSharding level : {DpSharding::kOptimizer, DpSharding::kGradients, DpSharding::kFull}) {
      const Plan sharded = CasePlan(GetParam(), level);
      if (level != DpSharding::kOptimizer && !EqualLanes(sharded)) {
        EXPECT_NE(sharded.Validate().ToString().find("replicas do not divide"), std::string::npos)
            << sharded.Validate().ToString();
        continue;
      }
      ASSERT_TRUE(sharded.Validate().ok()) << sharded.Validate().ToString();
      TrainRun run = TrainInProcess(sharded, options);
      ASSERT_TRUE(run.status.ok()) << run.status.ToString();
      SCOPED_TRACE(NameOf(DpShardingNames(), level));
      ExpectSameSteps(run, whole);
      // The steps changed the weights (synthetic tokens are random: the loss stays near ln 256).
      EXPECT_NE(run.Losses().back(), run.Losses().front());
      const int64_t peak = run.ranks.front().peak_bytes;
      if (level == DpSharding::kGradients ||
          (level == DpSharding::kFull && GetParam().full_saves)) {
        EXPECT_LT(peak, previous_peak);
      }
      previous_peak = peak;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ShardedTrainerTest,
    ::testing::Values(
        ShardCase{"dp2", PlanShape{.replicas = {2}}},
        ShardCase{"dp2_long", PlanShape{.replicas = {2}, .micro_batch_size = 2, .seq_len = 32}},
        ShardCase{"dp4", PlanShape{.replicas = {4}}},
        ShardCase{"tp2_dp2", PlanShape{.tp = 2, .replicas = {2}}},
        // The norms' partial gradients are all-reduced whole, then their chunks stepped.
        ShardCase{"tp2_sp_dp2", PlanShape{.tp = 2, .replicas = {2}}, 1, 0, true},
        ShardCase{"pp2_dp2_tied_split", PlanShape{.replicas = {2, 2}}},
        ShardCase{"hybrid_dp4_shard2", PlanShape{.replicas = {4}}, 1, 2},
        ShardCase{"cp2_dp2", PlanShape{.replicas = {2}}, 2},
        ShardCase{"pp2_r31_round_robin", PlanShape{.replicas = {3, 1}}},
        ShardCase{"pp2_zb_h1_dp2", PlanShape{.schedule = ScheduleKind::kZbH1, .replicas = {2, 2}}},
        ShardCase{"pp2_interleaved_dp2",
                  PlanShape{.schedule = ScheduleKind::kInterleaved1F1B,
                            .replicas = {2, 2},
                            .virtual_stages = 2,
                            .num_micro_batches = 4},
                  1, 0, false, false}),
    [](const ::testing::TestParamInfo<ShardCase>& param_info) { return param_info.param.name; });

TEST(DpShardTest, ChunksCoverEveryElementOnce) {
  for (int64_t numel : {0, 1, 5, 7, 64, 1000}) {
    for (int n : {1, 2, 3, 4, 8}) {
      int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const ShardSpan span = ShardOf(numel, n, r);
        EXPECT_EQ(span.chunk, (numel + n - 1) / n);
        EXPECT_LE(span.length, span.chunk);
        if (span.length > 0) {
          EXPECT_EQ(span.offset, next) << numel << "/" << n << " r " << r;
        }
        next += span.length;
      }
      EXPECT_EQ(next, numel) << numel << " over " << n;
    }
  }
}

TEST(DpShardTest, GroupsAreBlocksOfTheGradGroup) {
  const std::vector<int> grad = {1, 5, 9, 13, 17, 21};  // 3 replicas × cp 2
  EXPECT_EQ(ShardGroupOf(grad, 2, 9), (std::vector<int>{9, 13}));
  EXPECT_EQ(ShardGroupOf(grad, 6, 9), grad);
  EXPECT_EQ(ReplicateGroupOf(grad, 2, 13), (std::vector<int>{5, 13, 21}));
  EXPECT_EQ(ReplicateGroupOf(grad, 6, 13), (std::vector<int>{13}));
}

// A checkpoint written after 3 fully sharded dp 2 steps resumes under dp 4 sharded in groups of
// 2 (the optimizer state, also the gradients, or everything), under dp 1 and under dp 2
// unsharded, and every resumed run's next losses equal those of the run that never stopped.
TEST(ShardedCheckpointTest, ResumesUnderAnotherShardingAndDp) {
  TempDir dir;
  const std::string path = dir.path() + "/ckpt";
  TrainOptions options = AdamW();
  options.steps = 5;
  const ShardCase dp2{"dp2", PlanShape{.replicas = {2}}};
  TrainRun straight = TrainInProcess(CasePlan(dp2, DpSharding::kOptimizer), options);
  ASSERT_TRUE(straight.status.ok()) << straight.status.ToString();
  TrainOptions save = options;
  save.steps = 3;
  save.save_dir = path;
  save.save_every = 3;
  TrainRun first = TrainInProcess(CasePlan(dp2, DpSharding::kFull), save);
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  const std::vector<std::pair<ShardCase, DpSharding>> resumes = {
      {ShardCase{"dp4_shard2", PlanShape{.replicas = {4}}, 1, 2}, DpSharding::kOptimizer},
      {ShardCase{"dp4_shard2_gradients", PlanShape{.replicas = {4}}, 1, 2}, DpSharding::kGradients},
      {ShardCase{"dp4_shard2_full", PlanShape{.replicas = {4}}, 1, 2}, DpSharding::kFull},
      {ShardCase{"dp1", PlanShape{}}, DpSharding::kNone},
      {dp2, DpSharding::kNone}};
  for (const auto& [shape, level] : resumes) {
    TrainOptions resume = options;
    resume.load_path = path + "/step-3.safetensors";
    TrainRun rest = TrainInProcess(CasePlan(shape, level), resume);
    ASSERT_TRUE(rest.status.ok()) << shape.name << ": " << rest.status.ToString();
    ASSERT_EQ(rest.ranks.front().steps.size(), 2u) << shape.name;
    for (int k = 0; k < 2; ++k) {
      EXPECT_LE(RelativeError(rest.Losses()[k], straight.Losses()[3 + k]), kTolerance)
          << shape.name << ", step " << 4 + k;
    }
  }
}

}  // namespace
}  // namespace trident
