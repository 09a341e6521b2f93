// Run reports: the per-rank figures survive their float encoding exactly (peak bytes up to
// 2^47), the metrics line is JSON with the documented keys in order, the step line names the
// step, loss, slowest step, mean bubble and largest peak, the run summary takes medians
// without the warm-up step, and the Chrome trace has one complete event per action (µs) and
// one thread name per rank.
#include "runtime/train/run_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(RankStepStatsTest, IdleAndBubble) {
  RankStepStats s;
  s.schedule_ms = 10;
  s.compute_ms = 8;
  EXPECT_DOUBLE_EQ(s.IdleMs(), 2.0);
  EXPECT_DOUBLE_EQ(s.BubbleFraction(), 0.2);
  s.compute_ms = 12;  // clock noise: compute longer than the walk
  EXPECT_EQ(s.IdleMs(), 0.0);
  EXPECT_EQ(RankStepStats{}.BubbleFraction(), 0.0);  // empty schedule
}

TEST(EncodeStatsTest, RoundTripsExactly) {
  const std::vector<int64_t> peaks = {0,
                                      1,
                                      65535,
                                      65536,
                                      (int64_t{1} << 32) + 5,
                                      (int64_t{1} << 47) - 1,
                                      int64_t{1} << 47,
                                      (int64_t{1} << 47) + 123456789};
  for (int64_t peak : peaks) {
    RankStepStats s{12.5, 10.25, 8.0, 1.75, 0.5, 0.125, peak};
    std::vector<float> encoded = EncodeStats(s);
    ASSERT_EQ(encoded.size(), static_cast<size_t>(kStatsFloats));
    RankStepStats back = DecodeStats(encoded.data());
    EXPECT_EQ(back.peak_memory_bytes, peak);
    EXPECT_EQ(back.step_ms, 12.5);
    EXPECT_EQ(back.schedule_ms, 10.25);
    EXPECT_EQ(back.compute_ms, 8.0);
    EXPECT_EQ(back.pipeline_wait_ms, 1.75);
    EXPECT_EQ(back.sync_ms, 0.5);
    EXPECT_EQ(back.optimizer_ms, 0.125);
  }
}

TEST(MetricsLineTest, IsJsonWithTheDocumentedKeys) {
  StepSummary step{3, 10, 5.41, 1e-3, 1.25, 4096};
  RankStepStats stats{500, 10, 8, 1.5, 0.75, 0.25, 3355443};
  std::string line = MetricsLine(step, 5, MeshCoords{.dp = 1, .pp = 2, .tp = 1, .cp = 1}, stats);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{
                "step", "rank", "dp", "pp", "cp", "tp", "loss", "lr", "grad_norm", "tokens_per_s",
                "step_time_ms", "schedule_ms", "compute_ms", "pipeline_wait_ms", "idle_ms",
                "bubble_fraction", "sync_ms", "optimizer_ms", "peak_memory_bytes"}));
  EXPECT_EQ(j["step"], 3);
  EXPECT_EQ(j["rank"], 5);
  EXPECT_EQ(j["dp"], 1);
  EXPECT_EQ(j["pp"], 2);
  EXPECT_EQ(j["cp"], 1);
  EXPECT_EQ(j["tp"], 1);
  EXPECT_DOUBLE_EQ(j["loss"].get<double>(), 5.41);
  EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(j["grad_norm"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 8192.0);  // 4096 tokens in 0.5 s
  EXPECT_DOUBLE_EQ(j["step_time_ms"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(j["schedule_ms"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["compute_ms"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(j["pipeline_wait_ms"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["idle_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["bubble_fraction"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["sync_ms"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["optimizer_ms"].get<double>(), 0.25);
  EXPECT_EQ(j["peak_memory_bytes"], 3355443);
}

TEST(StepLineTest, SummarizesTheRanks) {
  StepSummary step{3, 10, 5.41234, 1e-3, 1.2034, 41000};
  RankStepStats fast{800, 10, 8, 0, 0, 0, int64_t{1} << 20};      // bubble 20%
  RankStepStats slow{1000, 10, 7.75, 0, 0, 0, int64_t{3} << 20};  // bubble 22.5%
  std::string line = StepLine(step, {fast, slow});
  EXPECT_THAT(line, HasSubstr("step 3/10"));
  EXPECT_THAT(line, HasSubstr("loss 5.4123"));
  EXPECT_THAT(line, HasSubstr("lr 1.00e-03"));
  EXPECT_THAT(line, HasSubstr("grad norm 1.203"));
  EXPECT_THAT(line, HasSubstr("1000.0 ms"));      // the slowest rank
  EXPECT_THAT(line, HasSubstr("41,000 tok/s"));   // 41000 tokens in 1 s
  EXPECT_THAT(line, HasSubstr("bubble 21%"));     // the mean of 20% and 22.5%
  EXPECT_THAT(line, HasSubstr("peak 3.00 MiB"));  // the largest
}

// A rank's figures with the given bubble fraction.
RankStepStats Figures(double step_ms, double compute_ms, double bubble, int64_t peak_bytes) {
  RankStepStats s;
  s.step_ms = step_ms;
  s.compute_ms = compute_ms;
  s.schedule_ms = compute_ms / (1 - bubble);
  s.peak_memory_bytes = peak_bytes;
  return s;
}

// A pp 2 plan of two ranks whose stages predict 10 ms and 5 ms per micro-batch over 4
// micro-batches (40 ms and 20 ms a step), 1 MiB and 2 MiB, and a 130 ms step.
Plan TwoStagePlan() {
  PlanShape shape;
  shape.replicas = {1, 1};
  Plan plan = MakePlan(TinyGpt(), shape);
  plan.stages[0].predicted_time_ms = 10;
  plan.stages[1].predicted_time_ms = 5;
  plan.stages[0].predicted_memory_bytes = int64_t{1} << 20;
  plan.stages[1].predicted_memory_bytes = int64_t{2} << 20;
  plan.predicted.step_time_ms = 130;
  plan.predicted.bubble_fraction = 0.25;
  plan.predicted.peak_memory_bytes = int64_t{2} << 20;
  return plan;
}

// Three steps of two ranks: the first (warm-up) is left out, the rest give medians of two.
TEST(RunSummaryTest, MediansLeaveOutTheFirstStep) {
  const int64_t mib = int64_t{1} << 20;
  std::vector<StepSummary> steps(3);
  for (int k = 0; k < 3; ++k) steps[k] = {k + 1, 3, 5.5, 1e-3, 1.0, 5000};
  const std::vector<std::vector<RankStepStats>> ranks = {
      {Figures(1000, 900, 0.5, mib), Figures(900, 800, 0.5, mib)},   // warm-up, left out
      {Figures(100, 80, 0.2, mib), Figures(90, 40, 0.4, mib)},       // slowest 100, busiest 80
      {Figures(150, 120, 0.1, mib), Figures(140, 60, 0.3, 2 * mib)}  // slowest 150, busiest 120
  };
  const RunFigures figures = MeasureRun(TwoStagePlan(), steps, ranks);
  const std::string text = RunSummary(figures);
  EXPECT_THAT(text, StartsWith("run summary (medians over steps 2-3):\n"));
  EXPECT_THAT(text, HasSubstr("step time             125.00 ms\n"));
  EXPECT_THAT(text, HasSubstr("predicted (plan)      130.00 ms  (measured -3.8%)\n"));
  EXPECT_THAT(text, HasSubstr("busiest rank compute  100.00 ms"));
  EXPECT_THAT(text, HasSubstr("step / compute        1.250\n"));
  EXPECT_THAT(text, HasSubstr("tokens/s              40,000\n"));  // 5000 tokens in 0.125 s
  EXPECT_THAT(text, HasSubstr("bubble (mean rank)    25.0% (predicted 25.0%)\n"));
  EXPECT_THAT(text, HasSubstr("peak memory           2.00 MiB (largest rank); predicted 2.00 MiB"));
  // Position 0: compute median of 80 and 120 = 100 against 40 (+150%); peak 1 MiB of 1 MiB.
  EXPECT_THAT(text, HasSubstr("100.00 ms"));
  EXPECT_THAT(text, HasSubstr("+150.0%"));
  // Position 1: median of 40 and 60 = 50 against 20; peak 2 MiB against 2 MiB.
  EXPECT_THAT(text, HasSubstr("+0.0%"));
  ASSERT_EQ(figures.positions.size(), 2u);
  EXPECT_DOUBLE_EQ(figures.positions[0].compute_ms, 100);
  EXPECT_DOUBLE_EQ(figures.positions[0].predicted_compute_ms, 40);
  EXPECT_DOUBLE_EQ(figures.positions[1].compute_ms, 50);
  EXPECT_DOUBLE_EQ(figures.positions[1].predicted_compute_ms, 20);
  EXPECT_EQ(figures.positions[1].peak_memory_bytes, 2 * mib);
  EXPECT_EQ(figures.positions[1].predicted_memory_bytes, 2 * mib);
}

// Replicas {3, 1} over 4 micro-batches: position 0's busiest replica runs ceil(4 / 3) = 2 of
// them, position 1 all 4; a position's measured compute is its busiest rank's.
TEST(RunSummaryTest, PredictedComputeCountsTheBusiestReplicasMicroBatches) {
  PlanShape shape;
  shape.replicas = {3, 1};
  shape.num_micro_batches = 4;
  Plan plan = MakePlan(TinyGpt(), shape);
  plan.stages[0].predicted_time_ms = 10;
  plan.stages[1].predicted_time_ms = 5;
  const std::vector<std::vector<RankStepStats>> ranks = {
      {Figures(100, 30, 0.2, 1), Figures(100, 16, 0.2, 1), Figures(100, 15, 0.2, 1),
       Figures(100, 21, 0.2, 1)}};
  const RunFigures figures = MeasureRun(plan, {{1, 1, 5.5, 1e-3, 1.0, 1000}}, ranks);
  ASSERT_EQ(figures.positions.size(), 2u);
  EXPECT_DOUBLE_EQ(figures.positions[0].predicted_compute_ms, 20);
  EXPECT_DOUBLE_EQ(figures.positions[0].compute_ms, 30);
  EXPECT_DOUBLE_EQ(figures.positions[1].predicted_compute_ms, 20);
  EXPECT_DOUBLE_EQ(figures.positions[1].compute_ms, 21);
}

TEST(RunSummaryTest, HandWrittenPlansShowNoPrediction) {
  Plan plan = TwoStagePlan();
  plan.predicted = {};
  for (PlanStage& s : plan.stages) s.predicted_time_ms = 0;
  const std::vector<std::vector<RankStepStats>> ranks = {
      {Figures(100, 80, 0.2, 1), Figures(90, 40, 0.4, 1)}};
  const std::string text = RunSummary(MeasureRun(plan, {{1, 1, 5.5, 1e-3, 1.0, 1000}}, ranks));
  EXPECT_THAT(text, Not(HasSubstr("predicted")));
}

TEST(RunSummaryTest, OneStepIsItsOwnMedian) {
  Plan plan = MakePlan(TinyGpt(), PlanShape{});
  const std::string text =
      RunSummary(MeasureRun(plan, {{1, 1, 5.5, 1e-3, 1.0, 1000}}, {{Figures(250, 200, 0.2, 1)}}));
  EXPECT_THAT(text, StartsWith("run summary (medians over steps 1-1):\n"));
  EXPECT_THAT(text, HasSubstr("step time             250.00 ms\n"));
  EXPECT_THAT(text, HasSubstr("tokens/s              4,000\n"));
}

// Regression: the heading once counted positions in `steps`, not their step numbers, so a run
// resumed at step 2 that trained steps 3 and 4 reported "steps 2-2".
TEST(RunSummaryTest, ResumedRunNamesItsOwnSteps) {
  const std::vector<StepSummary> steps = {{3, 4, 5.5, 1e-3, 1.0, 1000},
                                          {4, 4, 5.5, 1e-3, 1.0, 1000}};
  const std::vector<std::vector<RankStepStats>> ranks = {{Figures(100, 80, 0.2, 1)},
                                                         {Figures(100, 80, 0.2, 1)}};
  const RunFigures figures = MeasureRun(MakePlan(TinyGpt(), PlanShape{}), steps, ranks);
  EXPECT_THAT(RunSummary(figures), StartsWith("run summary (medians over steps 4-4):\n"));
}

TEST(RunSummaryJsonTest, HoldsMeasuredAndPredictedPairs) {
  const std::vector<std::vector<RankStepStats>> ranks = {
      {Figures(100, 80, 0.2, 3), Figures(90, 40, 0.4, 5)}};
  const RunFigures figures = MeasureRun(TwoStagePlan(), {{1, 1, 5.5, 1e-3, 1.0, 1000}}, ranks);
  nlohmann::json json = nlohmann::json::parse(RunSummaryJson(figures));
  EXPECT_EQ(json["steps"], nlohmann::json({1, 1}));
  EXPECT_DOUBLE_EQ(json["step_time_ms"]["measured"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(json["step_time_ms"]["predicted"].get<double>(), 130);
  EXPECT_DOUBLE_EQ(json["positions"][1]["compute_ms"]["measured"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(json["positions"][1]["compute_ms"]["predicted"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(json["positions"][1]["peak_memory_bytes"]["measured"].get<double>(), 5);
}

TEST(TraceToChromeJsonTest, OneCompleteEventPerActionAndOneThreadNamePerRank) {
  StatusOr<RankMap> ranks = RankMap::Create(2, 1, {2, 1});
  ASSERT_TRUE(ranks.ok()) << ranks.status().ToString();
  const std::vector<TraceEvent> events = {
      {0, 1, {ActionKind::kForward, 0, 0}, 0.0, 1.5},
      {4, 1, {ActionKind::kForward, 1, 0}, 1.5, 3.25},
      {4, 1, {ActionKind::kBackward, 1, 0}, 3.25, 6.0},
      {3, 2, {ActionKind::kWeight, 0, 3}, 10.25, 11.0},
  };
  nlohmann::json j = nlohmann::json::parse(TraceToChromeJson(events, *ranks));
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::vector<int> named_tids;
  std::vector<nlohmann::json> complete;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "M") {
      EXPECT_EQ(e["name"], "thread_name");
      named_tids.push_back(e["tid"].get<int>());
    } else {
      EXPECT_EQ(e["ph"], "X");
      complete.push_back(e);
    }
  }
  EXPECT_EQ(named_tids, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["tid"] == 3) {
      EXPECT_EQ(e["args"]["name"], "rank 3 (dp 1, pp 0, tp 1)");
    }
  }
  ASSERT_EQ(complete.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = complete[i];
    const TraceEvent& want = events[i];
    EXPECT_EQ(e["name"], ActionToString(want.action));
    EXPECT_EQ(e["pid"], 0);
    EXPECT_EQ(e["tid"], want.rank);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), want.start_ms * 1000);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), (want.end_ms - want.start_ms) * 1000);
    EXPECT_EQ(e["args"]["stage"], want.action.stage);
    EXPECT_EQ(e["args"]["micro_batch"], want.action.micro_batch);
    EXPECT_EQ(e["args"]["step"], want.step);
  }
  EXPECT_EQ(complete[1]["name"], "1F0");
  EXPECT_DOUBLE_EQ(complete[3]["ts"].get<double>(), 10250.0);
  EXPECT_DOUBLE_EQ(complete[3]["dur"].get<double>(), 750.0);
}

}  // namespace
}  // namespace trident
