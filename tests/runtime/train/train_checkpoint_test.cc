// Checkpoints of a running job through the Trainer over in-process ranks: a pp 2 run saves at
// steps 2 and 4; resuming from step 2 under another plan (tp 2, one rank, dp 2) gives the
// losses of steps 3 and 4 of the uninterrupted run; a checkpoint of another optimizer or model
// is refused with the fix, by a load and by the header-only check made before ranks connect.
#include "runtime/train/train_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

constexpr double kLossTolerance = 1e-5;  // relative

PlanShape Shape(int tp, std::vector<int> replicas) {
  PlanShape s;
  s.tp = tp;
  s.replicas = std::move(replicas);
  return s;
}

// Four steps under pp 2 (tied table split over the positions), saving every 2 steps.
class TrainCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TrainOptions options = QuietOptions(4);
    options.save_dir = dir_.path() + "/ckpt";
    options.save_every = 2;
    full_ = TrainInProcess(MakePlan(TinyGpt(), Shape(1, {1, 1})), options);
    ASSERT_TRUE(full_.status.ok()) << full_.status.ToString();
    ASSERT_EQ(full_.Losses().size(), 4u);
  }
  std::string Saved(int step) const {
    return dir_.path() + "/ckpt/step-" + std::to_string(step) + ".safetensors";
  }
  // Resumes from `path` (step 2) under `shape` and checks steps 3 and 4 against the full run.
  void ExpectResumeMatches(const PlanShape& shape, const std::string& path) {
    TrainOptions options = QuietOptions(4);
    options.load_path = path;
    TrainRun resumed = TrainInProcess(MakePlan(TinyGpt(), shape), options);
    ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString();
    for (const RankRun& rank : resumed.ranks) EXPECT_EQ(rank.start_step, 2);
    const std::vector<double> losses = resumed.Losses();
    ASSERT_EQ(losses.size(), 2u);
    EXPECT_EQ(resumed.ranks.front().steps[0].step, 3);
    for (size_t k = 0; k < 2; ++k) {
      const double want = full_.Losses()[k + 2];
      EXPECT_LE(RelativeError(losses[k], want), kLossTolerance)
          << "step " << k + 3 << ": " << losses[k] << " vs " << want;
    }
  }

  TempDir dir_;
  TrainRun full_;
};

TEST_F(TrainCheckpointTest, SavesEveryTwoSteps) {
  EXPECT_TRUE(std::filesystem::exists(Saved(2)));
  EXPECT_TRUE(std::filesystem::exists(Saved(4)));
  EXPECT_FALSE(std::filesystem::exists(Saved(1)));
  EXPECT_FALSE(std::filesystem::exists(Saved(3)));
}

TEST_F(TrainCheckpointTest, ResumesUnderTensorParallelism) {
  ExpectResumeMatches(Shape(2, {1}), Saved(2));
}

TEST_F(TrainCheckpointTest, ResumesOnOneRank) { ExpectResumeMatches(Shape(1, {1}), Saved(2)); }

TEST_F(TrainCheckpointTest, ResumesUnderDataParallelism) {
  ExpectResumeMatches(Shape(1, {2}), Saved(2));
}

TEST_F(TrainCheckpointTest, ResumesUnderTheSamePlan) {
  ExpectResumeMatches(Shape(1, {1, 1}), Saved(2));
}

TEST_F(TrainCheckpointTest, ResumesUnderInterleaving) {
  PlanShape shape = Shape(1, {1, 1});
  shape.schedule = ScheduleKind::kInterleaved1F1B;
  shape.virtual_stages = 2;
  ExpectResumeMatches(shape, Saved(2));
}

// Saved from tp shards (joined at rank 0) of a plan with replicas {2, 1}, resumed on one rank.
TEST_F(TrainCheckpointTest, SavedFromTensorShardsResumesOnOneRank) {
  TrainOptions options = QuietOptions(2);
  options.save_dir = dir_.path() + "/sharded";
  TrainRun sharded = TrainInProcess(MakePlan(TinyGpt(), Shape(2, {2, 1})), options);
  ASSERT_TRUE(sharded.status.ok()) << sharded.status.ToString();
  ExpectResumeMatches(Shape(1, {1}), options.save_dir + "/step-2.safetensors");
}

// SGD's momentum buffer travels as exp_avg; a run resumed under tp 2 continues it.
TEST(TrainCheckpointSgdTest, MomentumResumes) {
  TempDir dir;
  TrainOptions options = QuietOptions(4);
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.momentum = 0.9;
  options.optimizer.schedule.lr = 0.5;
  options.save_dir = dir.path() + "/sgd";
  options.save_every = 2;
  TrainRun full = TrainInProcess(MakePlan(TinyGpt(), Shape(1, {1, 1})), options);
  ASSERT_TRUE(full.status.ok()) << full.status.ToString();
  options.save_dir.clear();
  options.save_every = 0;
  options.load_path = dir.path() + "/sgd/step-2.safetensors";
  TrainRun resumed = TrainInProcess(MakePlan(TinyGpt(), Shape(2, {1})), options);
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString();
  ASSERT_EQ(resumed.Losses().size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_LE(RelativeError(resumed.Losses()[k], full.Losses()[k + 2]), kLossTolerance)
        << "step " << k + 3;
  }
}

TEST_F(TrainCheckpointTest, WrongOptimizerIsRefusedWithTheFlag) {
  TrainOptions options = QuietOptions(4);
  options.load_path = Saved(2);
  options.optimizer.kind = OptimizerKind::kSgd;
  TrainRun run = TrainInProcess(MakePlan(TinyGpt(), Shape(1, {1})), options);
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status.message(), HasSubstr("--optimizer adamw"));
  EXPECT_THAT(run.status.message(), HasSubstr("sgd"));
}

TEST_F(TrainCheckpointTest, WrongModelIsRefused) {
  TrainOptions options = QuietOptions(4);
  options.load_path = Saved(2);
  ModelSpec other = TinyGpt();
  other.name = "gpt-other";
  TrainRun run = TrainInProcess(MakePlan(other, Shape(1, {1})), options);
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status.message(), HasSubstr("gpt-tiny"));
  EXPECT_THAT(run.status.message(), HasSubstr("gpt-other"));
}

// What the worker checks of --load before any rank connects, from the file's header: the same
// refusals as a load, and the plan's own checkpoint passes.
TEST_F(TrainCheckpointTest, ResumableFromTheHeaderAlone) {
  const Plan plan = MakePlan(TinyGpt(), Shape(1, {1}));
  EXPECT_TRUE(CheckResumable(Saved(2), plan, OptimizerKind::kAdamW).ok());
  ModelSpec other = TinyGpt();
  other.name = "gpt-other";
  Status model = CheckResumable(Saved(2), MakePlan(other, Shape(1, {1})), OptimizerKind::kAdamW);
  EXPECT_EQ(model.message(),
            Saved(2) + ": written for model gpt-tiny, but the plan trains gpt-other");
  Status optimizer = CheckResumable(Saved(2), plan, OptimizerKind::kSgd);
  EXPECT_THAT(optimizer.message(), HasSubstr("hint: pass --optimizer adamw"));
  EXPECT_EQ(CheckResumable(Saved(3), plan, OptimizerKind::kAdamW).code(), StatusCode::kNotFound);
}

TEST_F(TrainCheckpointTest, NothingLeftToTrainIsRefused) {
  TrainOptions options = QuietOptions(4);
  options.load_path = Saved(4);
  TrainRun run = TrainInProcess(MakePlan(TinyGpt(), Shape(1, {1})), options);
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status.message(), HasSubstr("--steps 4"));
}

// Regression: a checkpoint of SGD without momentum loaded into SGD with momentum once failed
// on the missing exp_avg tensor with a hint that blamed the model.
TEST(TrainCheckpointSgdTest, MissingMomentumBufferNamesTheFlag) {
  TempDir dir;
  TrainOptions options = QuietOptions(2);
  options.optimizer.kind = OptimizerKind::kSgd;
  options.save_dir = dir.path();
  TrainRun plain = TrainInProcess(MakePlan(TinyGpt(), Shape(1, {1})), options);
  ASSERT_TRUE(plain.status.ok()) << plain.status.ToString();
  options.save_dir.clear();
  options.steps = 3;
  options.optimizer.momentum = 0.9;
  options.load_path = dir.path() + "/step-2.safetensors";
  TrainRun run = TrainInProcess(MakePlan(TinyGpt(), Shape(1, {1})), options);
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status.message(), HasSubstr("--momentum"));
}

}  // namespace
}  // namespace trident
