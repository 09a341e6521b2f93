// The Trainer end to end over in-process ranks (one thread and one CpuCompute per rank) on a
// gpt-tiny-like model and synthetic data: same seed, same losses — every parallel layout gives
// the per-step losses (and gradient norms) of one rank, and every rank reports the same
// values. Also: the metrics and trace files, and the errors Create reports.
#include "runtime/train/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/comm/inprocess_comm.h"
#include "runtime/compute/cpu_compute.h"
#include "runtime/train/job_layout.h"
#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

constexpr int kSteps = 3;
constexpr double kLossTolerance = 1e-5;  // relative, fp32 sums in another order
constexpr double kNormTolerance = 1e-4;

// Checks what every rank of `run` saw: kSteps steps, the same summary on every rank, the
// per-rank figures on rank 0 only.
void ExpectConsistentRanks(const TrainRun& run, const Plan& plan, const TrainOptions& options) {
  ASSERT_EQ(run.ranks.size(), static_cast<size_t>(plan.devices));
  const RankRun& first = run.ranks.front();
  ASSERT_EQ(first.steps.size(), static_cast<size_t>(kSteps));
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const RankRun& rank = run.ranks[r];
    ASSERT_EQ(rank.steps.size(), first.steps.size()) << "rank " << r;
    EXPECT_EQ(rank.start_step, 0);
    for (size_t k = 0; k < rank.steps.size(); ++k) {
      const StepSummary& s = rank.steps[k];
      EXPECT_EQ(s.step, static_cast<int64_t>(k) + 1);
      EXPECT_EQ(s.steps, kSteps);
      EXPECT_EQ(s.loss, first.steps[k].loss) << "rank " << r << ", step " << s.step;
      EXPECT_EQ(s.grad_norm, first.steps[k].grad_norm) << "rank " << r << ", step " << s.step;
      EXPECT_EQ(s.lr, options.optimizer.schedule.At(s.step));
      EXPECT_EQ(s.tokens, plan.global_batch * plan.seq_len);
      EXPECT_EQ(rank.stats_sizes[k], r == 0 ? run.ranks.size() : 0) << "rank " << r;
    }
  }
}

// The one-rank run every layout of `num_micro_batches` micro-batches is compared with.
const TrainRun& Reference(bool tied, int num_micro_batches = 4) {
  static std::map<std::pair<bool, int>, TrainRun>* const kRuns =
      new std::map<std::pair<bool, int>, TrainRun>();
  auto it = kRuns->find({tied, num_micro_batches});
  if (it != kRuns->end()) return it->second;
  PlanShape shape;
  shape.num_micro_batches = num_micro_batches;
  TrainRun run = TrainInProcess(MakePlan(TinyGpt(2, tied), shape), QuietOptions(kSteps));
  return kRuns->emplace(std::make_pair(tied, num_micro_batches), std::move(run)).first->second;
}

void ExpectSameAsReference(const TrainRun& run, bool tied, int num_micro_batches = 4) {
  const TrainRun& ref = Reference(tied, num_micro_batches);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  ASSERT_EQ(run.ranks.front().steps.size(), ref.ranks.front().steps.size());
  for (size_t k = 0; k < ref.ranks.front().steps.size(); ++k) {
    const StepSummary& got = run.ranks.front().steps[k];
    const StepSummary& want = ref.ranks.front().steps[k];
    EXPECT_LE(RelativeError(got.loss, want.loss), kLossTolerance)
        << "step " << got.step << ": loss " << got.loss << " vs " << want.loss;
    EXPECT_LE(RelativeError(got.grad_norm, want.grad_norm), kNormTolerance)
        << "step " << got.step << ": grad norm " << got.grad_norm << " vs " << want.grad_norm;
  }
}

TEST(TrainerTest, OneRankLossStartsNearLnVocab) {
  const TrainRun& ref = Reference(true);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  ExpectConsistentRanks(ref, MakePlan(TinyGpt(), PlanShape{}), QuietOptions(kSteps));
  const std::vector<double> losses = ref.Losses();
  ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
  // Weights of std 0.02 give nearly uniform predictions over 256 tokens.
  EXPECT_NEAR(losses[0], std::log(256.0), 0.05);
  for (double loss : losses) EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(ref.ranks.front().steps[0].grad_norm, 0.0);
  EXPECT_NE(losses[0], losses[1]);
}

struct LayoutCase {
  std::string name;
  PlanShape shape;
};
void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

PlanShape Shape(ScheduleKind kind, int tp, std::vector<int> replicas, int virtual_stages = 1,
                int num_micro_batches = 4) {
  PlanShape s;
  s.schedule = kind;
  s.tp = tp;
  s.replicas = std::move(replicas);
  s.virtual_stages = virtual_stages;
  s.num_micro_batches = num_micro_batches;
  return s;
}

// Replicas that do not divide the micro-batches (round robin).
PlanShape RoundRobin(ScheduleKind kind, std::vector<int> replicas, int num_micro_batches) {
  return Shape(kind, 1, std::move(replicas), 1, num_micro_batches);
}

class TrainerLayoutTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(TrainerLayoutTest, SameLossesAsOneRank) {
  const Plan plan = MakePlan(TinyGpt(), GetParam().shape);
  ASSERT_TRUE(plan.Validate().ok()) << plan.Validate().ToString();
  const TrainOptions options = QuietOptions(kSteps);
  TrainRun run = TrainInProcess(plan, options);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  ExpectConsistentRanks(run, plan, options);
  ExpectSameAsReference(run, /*tied=*/true, plan.num_micro_batches);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, TrainerLayoutTest,
    ::testing::Values(
        LayoutCase{"pp2_1f1b", Shape(ScheduleKind::k1F1B, 1, {1, 1})},
        LayoutCase{"tp2", Shape(ScheduleKind::k1F1B, 2, {1})},
        LayoutCase{"dp2", Shape(ScheduleKind::k1F1B, 1, {2})},
        // The tied table and the head's copy on different positions, the
        // embedding's position replicated: a tie group of three ranks.
        LayoutCase{"pp2_tied_split_replicas21", Shape(ScheduleKind::k1F1B, 1, {2, 1})},
        LayoutCase{"pp2_gpipe", Shape(ScheduleKind::kGpipe, 1, {1, 1})},
        LayoutCase{"pp2_zb_h1", Shape(ScheduleKind::kZbH1, 1, {1, 1})},
        LayoutCase{"pp2_interleaved", Shape(ScheduleKind::kInterleaved1F1B, 1, {1, 1}, 2)},
        LayoutCase{"pp1_interleaved", Shape(ScheduleKind::kInterleaved1F1B, 1, {1}, 2)},
        LayoutCase{"pp2_dp2_tp2", Shape(ScheduleKind::k1F1B, 2, {2, 2})},
        LayoutCase{"pp4_1f1b", Shape(ScheduleKind::k1F1B, 1, {1, 1, 1, 1})},
        LayoutCase{"pp4_zb_h1", Shape(ScheduleKind::kZbH1, 1, {1, 1, 1, 1})},
        LayoutCase{"pp2_interleaved_r21", Shape(ScheduleKind::kInterleaved1F1B, 1, {2, 1}, 2)},
        LayoutCase{"pp2_zb_h1_r21", Shape(ScheduleKind::kZbH1, 1, {2, 1})},
        LayoutCase{"pp2_gpipe_r21_tp2", Shape(ScheduleKind::kGpipe, 2, {2, 1})},
        LayoutCase{"naive_dp4", Shape(ScheduleKind::kNaive, 1, {4})},
        LayoutCase{"pp2_r12", Shape(ScheduleKind::k1F1B, 1, {1, 2})},
        LayoutCase{"pp2_1f1b_r31_m4", RoundRobin(ScheduleKind::k1F1B, {3, 1}, 4)},
        LayoutCase{"pp2_gpipe_r31_m4", RoundRobin(ScheduleKind::kGpipe, {3, 1}, 4)},
        LayoutCase{"pp2_zb_h1_r31_m4", RoundRobin(ScheduleKind::kZbH1, {3, 1}, 4)},
        LayoutCase{"pp2_1f1b_r13_m4", RoundRobin(ScheduleKind::k1F1B, {1, 3}, 4)},
        LayoutCase{"pp3_1f1b_r211_m5", RoundRobin(ScheduleKind::k1F1B, {2, 1, 1}, 5)},
        LayoutCase{"pp3_gpipe_r211_m5", RoundRobin(ScheduleKind::kGpipe, {2, 1, 1}, 5)},
        LayoutCase{"pp3_zb_h1_r211_m5", RoundRobin(ScheduleKind::kZbH1, {2, 1, 1}, 5)},
        LayoutCase{"pp3_1f1b_r132_m5", RoundRobin(ScheduleKind::k1F1B, {1, 3, 2}, 5)}),
    [](const ::testing::TestParamInfo<LayoutCase>& param_info) { return param_info.param.name; });

// Clipping (active: the norm exceeds the limit), weight decay, a warm-up and decay schedule
// and small gradient buckets: a clipped step depends on the global norm, so a norm counted
// wrongly under some layout would change the later losses.
TEST(TrainerTest, ClippedAdamWAgreesAcrossLayouts) {
  TrainOptions options = QuietOptions(kSteps);
  options.optimizer.clip_grad_norm = 0.05;
  options.optimizer.weight_decay = 0.1;
  options.optimizer.schedule = {3e-3, 1e-4, 1, 3};
  options.bucket_bytes = 4096;
  TrainRun ref = TrainInProcess(MakePlan(TinyGpt(), PlanShape{}), options);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  ASSERT_GT(ref.ranks[0].steps[0].grad_norm, options.optimizer.clip_grad_norm);
  for (const PlanShape& shape :
       {Shape(ScheduleKind::k1F1B, 2, {2, 2}), Shape(ScheduleKind::kZbH1, 2, {2, 1})}) {
    const Plan plan = MakePlan(TinyGpt(), shape);
    TrainRun run = TrainInProcess(plan, options);
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    ExpectConsistentRanks(run, plan, options);
    for (size_t k = 0; k < kSteps; ++k) {
      EXPECT_LE(RelativeError(run.Losses()[k], ref.Losses()[k]), kLossTolerance)
          << plan.ToString() << ", step " << k + 1;
    }
  }
}

TEST(TrainerTest, SgdWithMomentumAgreesAcrossLayouts) {
  TrainOptions options = QuietOptions(kSteps);
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.momentum = 0.9;
  options.optimizer.schedule.lr = 0.5;
  TrainRun ref = TrainInProcess(MakePlan(TinyGpt(), PlanShape{}), options);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  const Plan plan = MakePlan(TinyGpt(), Shape(ScheduleKind::k1F1B, 2, {2, 1}));
  TrainRun run = TrainInProcess(plan, options);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  ExpectConsistentRanks(run, plan, options);
  for (size_t k = 0; k < kSteps; ++k) {
    EXPECT_LE(RelativeError(run.Losses()[k], ref.Losses()[k]), kLossTolerance) << "step " << k + 1;
  }
  // SGD takes other steps than AdamW: the losses after the first step differ.
  EXPECT_NE(ref.Losses()[1], Reference(true).Losses()[1]);
}

// In every pp 2 layout above the embedding (stage 0) and the head (the last stage) sit on
// different positions, so the tie is split.
TEST(TrainerTest, PipelineLayoutsSplitTheTie) {
  for (const std::vector<int>& replicas : {std::vector<int>{1, 1}, std::vector<int>{2, 1}}) {
    StatusOr<JobLayout> layout =
        JobLayout::Create(MakePlan(TinyGpt(), Shape(ScheduleKind::k1F1B, 1, replicas)));
    ASSERT_TRUE(layout.ok()) << layout.status().ToString();
    EXPECT_NE(layout->PositionOf(0), layout->PositionOf(layout->LastStage()));
  }
}

TEST(TrainerTest, UntiedModelUnderPipelineMatchesOneRank) {
  const Plan plan = MakePlan(TinyGpt(2, /*tied=*/false), Shape(ScheduleKind::k1F1B, 1, {1, 1}));
  TrainRun run = TrainInProcess(plan, QuietOptions(kSteps));
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  ExpectConsistentRanks(run, plan, QuietOptions(kSteps));
  ExpectSameAsReference(run, /*tied=*/false);
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Steps 2 and 3 traced: every rank's list once per traced step, in list order, and step 3
// after the end of step 2.
TEST(TrainerTest, WritesMetricsAndTrace) {
  TempDir dir;
  const Plan plan = MakePlan(TinyGpt(), Shape(ScheduleKind::k1F1B, 1, {2, 1}));
  TrainOptions options = QuietOptions(3);
  options.metrics_path = dir.path() + "/metrics.jsonl";
  options.trace_path = dir.path() + "/trace.json";
  options.trace_steps = {2, 3};
  TrainRun run = TrainInProcess(plan, options);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  std::vector<std::string> lines = Lines(options.metrics_path);
  ASSERT_EQ(lines.size(), 3u * 3u);  // steps × ranks
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(j["step"], i / 3 + 1);
    EXPECT_EQ(j["rank"], i % 3);
    EXPECT_DOUBLE_EQ(j["loss"].get<double>(), run.ranks[0].steps[i / 3].loss);
  }
  std::ifstream trace_file(options.trace_path);
  std::stringstream text;
  text << trace_file.rdbuf();
  nlohmann::json trace = nlohmann::json::parse(text.str());
  StatusOr<JobLayout> layout = JobLayout::Create(plan);
  ASSERT_TRUE(layout.ok());
  // Per traced step and rank, the action names in trace order.
  std::map<int, std::vector<std::vector<std::string>>> names;
  std::map<int, double> first_start_us, last_end_us;
  size_t thread_names = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M") ++thread_names;
    if (e["ph"] != "X") continue;
    const int step = e["args"]["step"].get<int>();
    const double start = e["ts"].get<double>(), end = start + e["dur"].get<double>();
    names[step].resize(3);
    names[step][e["tid"].get<size_t>()].push_back(e["name"].get<std::string>());
    first_start_us[step] =
        first_start_us.count(step) ? std::min(first_start_us[step], start) : start;
    last_end_us[step] = std::max(last_end_us[step], end);
  }
  EXPECT_EQ(thread_names, 3u);
  ASSERT_EQ(names.size(), 2u);
  for (int step : {2, 3}) {
    for (int r = 0; r < layout->NumRanks(); ++r) {
      std::vector<std::string> want;
      for (const Action& a : layout->ProgramOf(r)) want.push_back(ActionToString(a));
      EXPECT_EQ(names[step][r], want) << "step " << step << ", rank " << r;
    }
  }
  EXPECT_GE(first_start_us[3], last_end_us[2] - 1e-3);
}

TEST(TrainerTest, WorldOfTheWrongSizeIsRejected) {
  const Plan plan = MakePlan(TinyGpt(), Shape(ScheduleKind::k1F1B, 1, {1, 1}));
  Status status = RunInProcess(1, [&](Comm& comm) -> Status {
    CpuCompute compute;
    return Trainer::Create(plan, QuietOptions(1), &comm, &compute).status();
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("mpirun -np 2"));
}

TEST(TrainerTest, PipeDreamIsRejected) {
  Plan plan = MakePlan(TinyGpt(), Shape(ScheduleKind::kPipeDream, 1, {1, 1}));
  TrainRun run = TrainInProcess(plan, QuietOptions(1));
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status.message(), HasSubstr("pipedream"));
}

// SGD at an absurd learning rate overflows the weights after the first step.
TEST(TrainerTest, NonFiniteLossEndsTheRunNamingTheStep) {
  TrainOptions options = QuietOptions(kSteps);
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.schedule.lr = 1e35;
  TrainRun run =
      TrainInProcess(MakePlan(TinyGpt(), Shape(ScheduleKind::k1F1B, 1, {1, 1})), options);
  EXPECT_EQ(run.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(run.status.message(), HasSubstr("step 2: the loss is not finite"));
  EXPECT_THAT(run.status.message(), HasSubstr("lower --lr"));
  for (const RankRun& rank : run.ranks) EXPECT_EQ(rank.steps.size(), 1u);
}

TEST(TrainerTest, DataBeyondTheVocabularyIsRejected) {
  TempDir dir;
  const std::string path = dir.path() + "/text.txt";
  std::ofstream(path) << std::string(2000, 'a') << "\xff";  // byte 255
  TrainOptions options = QuietOptions(1);
  options.data = path;
  ModelSpec model = TinyGpt();
  model.vocab_size = 100;
  TrainRun run = TrainInProcess(MakePlan(model, PlanShape{}), options);
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status.message(), HasSubstr("vocab_size 100"));
}

TEST(TrainOptionsTest, ValidateNamesTheFlag) {
  TrainOptions ok = QuietOptions(3);
  EXPECT_TRUE(ok.Validate().ok());
  TrainOptions steps = ok;
  steps.steps = 0;
  EXPECT_THAT(steps.Validate().message(), HasSubstr("--steps"));
  TrainOptions save = ok;
  save.save_every = 2;
  EXPECT_THAT(save.Validate().message(), HasSubstr("--save"));
  TrainOptions trace = ok;
  trace.trace_steps = {4};
  EXPECT_THAT(trace.Validate().message(), HasSubstr("--trace-steps"));
  TrainOptions lr = ok;
  lr.optimizer.schedule.lr = 0;
  EXPECT_THAT(lr.Validate().message(), HasSubstr("--lr"));
}

}  // namespace
}  // namespace trident
