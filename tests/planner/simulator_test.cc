#include "planner/simulator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "simulation_inputs.h"

namespace trident {
namespace {

constexpr int kPipelineSizes[] = {1, 2, 3, 4, 8};
constexpr int kMicroBatchCounts[] = {1, 2, 3, 4, 8, 16};

Schedule Generated(ScheduleKind kind, int pp, int v, int m) {
  StatusOr<Schedule> s = GenerateSchedule(kind, pp, v, m);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : Schedule{};
}

std::string ErrorOf(const SimulationInput& in) {
  StatusOr<SimulationResult> r = Simulate(in);
  return r.ok() ? "ok" : r.status().message();
}

// The closed forms are exact rationals of small integers; with integer times the simulator's
// idle / (lanes × makespan) is the same correctly rounded double, so equality is exact.
TEST(Simulator, NaiveBubbleIsPMinusOneOverP) {
  for (int p : kPipelineSizes) {
    Schedule s = Generated(ScheduleKind::kNaive, p, 1, 1);
    SimulationResult r = Simulated(Uniform(s, {1, 2, 0}));
    EXPECT_EQ(r.bubble_fraction, double(p - 1) / p) << "p " << p;
    EXPECT_EQ(r.makespan_ms, 3.0 * p);
    EXPECT_EQ(r.lanes[0].peak_live_activations, 1);
  }
}

TEST(Simulator, GpipeAndOneFOneBBubbleIsPMinusOneOverMPlusPMinusOne) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B}) {
    for (int p : kPipelineSizes) {
      for (int m : kMicroBatchCounts) {
        Schedule s = Generated(kind, p, 1, m);
        SimulationResult r = Simulated(Uniform(s, {1, 2, 0}));
        SCOPED_TRACE(s.ToString());
        EXPECT_EQ(r.bubble_fraction, double(p - 1) / (m + p - 1));
        EXPECT_EQ(r.makespan_ms, 3.0 * (m + p - 1));
        int peak = kind == ScheduleKind::kGpipe ? m : std::min(p, m);
        EXPECT_EQ(r.lanes[0].peak_live_activations, peak);
      }
    }
  }
}

TEST(Simulator, InterleavedBubbleIsPMinusOneOverVMPlusPMinusOne) {
  for (int p : kPipelineSizes) {
    for (int v : {2, 3}) {
      for (int groups : {1, 2, 3, 4}) {
        int m = groups * p;
        Schedule s = Generated(ScheduleKind::kInterleaved1F1B, p, v, m);
        SCOPED_TRACE(s.ToString());
        // A whole stage takes F = v, B = 2v, so one chunk takes F/v = 1 and B/v = 2.
        SimulationResult r = Simulated(Uniform(s, {1, 2, 0}));
        EXPECT_EQ(r.bubble_fraction, double(p - 1) / (v * m + p - 1));
        // F = 1, B = 2 split over v chunks: not exactly representable, equal to 1e-12.
        double chunk_f = 1.0 / v, chunk_b = 2.0 / v;
        SimulationResult thirds = Simulated(Uniform(s, {chunk_f, chunk_b, 0}));
        EXPECT_NEAR(thirds.bubble_fraction, double(p - 1) / (v * m + p - 1), 1e-12);
        // Megatron's count: p·(1 + (p-1)/(p·v)) whole stages = v·p + p - 1 chunks.
        EXPECT_EQ(r.lanes[0].peak_live_activations, std::min(v * p + p - 1, m * v));
      }
    }
  }
}

TEST(Simulator, InterleavedPeakMatchesMegatronWhenMIsLarge) {
  Schedule s = Generated(ScheduleKind::kInterleaved1F1B, 4, 2, 16);
  SimulationResult r = Simulated(Uniform(s, {1, 2, 0}));
  double whole_stages = r.lanes[0].peak_live_activations / 2.0;
  EXPECT_EQ(whole_stages, 4 * (1 + 3.0 / (4 * 2)));  // 5.5
}

// ZB-H1 with m >= p: (p-1)(F+B-W) / (m(F+B+W) + (p-1)(F+B-W)). With m < p and
// F = B = W = 1 the exact schedule gives (2p-m-1)/(2p+2m-1) (see core/schedule.cc).
double ZbH1Bubble(int p, int m, double f, double b, double w) {
  if (m < p) return double(2 * p - m - 1) / (2 * p + 2 * m - 1);
  return (p - 1) * (f + b - w) / (m * (f + b + w) + (p - 1) * (f + b - w));
}

TEST(Simulator, ZbH1BubbleMatchesTheClosedForm) {
  for (int p : kPipelineSizes) {
    for (int m : kMicroBatchCounts) {
      Schedule s = Generated(ScheduleKind::kZbH1, p, 1, m);
      SCOPED_TRACE(s.ToString());
      SimulationResult r = Simulated(Uniform(s, {1, 1, 1}));
      EXPECT_EQ(r.bubble_fraction, ZbH1Bubble(p, m, 1, 1, 1));
      EXPECT_EQ(r.lanes[0].peak_live_activations, std::min(p, m));
      for (const LaneStats& stats : r.lanes) {
        EXPECT_LE(stats.peak_live_activations, p);  // 1F1B's peak, on every position
      }
      if (m >= p) {
        SimulationResult uneven = Simulated(Uniform(s, {1, 2, 1}));
        EXPECT_EQ(uneven.bubble_fraction, ZbH1Bubble(p, m, 1, 2, 1));
      }
    }
  }
}

TEST(Simulator, ZbH1BeatsOneFOneB) {
  Schedule zb = Generated(ScheduleKind::kZbH1, 4, 1, 8);
  Schedule ofob = Generated(ScheduleKind::k1F1B, 4, 1, 8);
  double zb_ms = Simulated(Uniform(zb, {1, 1, 1})).makespan_ms;
  double ofob_ms = Simulated(Uniform(ofob, {1, 2, 0})).makespan_ms;
  EXPECT_EQ(zb_ms, 27);    // 3m + (p-1)
  EXPECT_EQ(ofob_ms, 33);  // 3(m + p - 1)
}

TEST(Simulator, PipeDreamSteadyStepIsMTimesFPlusB) {
  constexpr int kSteps = 50;
  for (int p : kPipelineSizes) {
    for (int m : kMicroBatchCounts) {
      Schedule s = Generated(ScheduleKind::kPipeDream, p, 1, m);
      SCOPED_TRACE(s.ToString());
      SimulationResult r = Simulated(Uniform(s, {1, 2, 0}, kSteps));
      EXPECT_EQ(r.steady_step_ms, 3.0 * m);
      // One 1F1B over the whole stream: the fill and drain happen once.
      EXPECT_EQ(r.bubble_fraction, double(p - 1) / (kSteps * m + p - 1));
      EXPECT_LT(r.bubble_fraction, 0.13);
      EXPECT_EQ(r.events.size(), static_cast<size_t>(2 * p * m * kSteps));
      EXPECT_EQ(r.lanes[0].peak_live_activations, p);
    }
  }
}

TEST(Simulator, PipeDreamSteadyStepFollowsTheSlowestStage) {
  Schedule s = Generated(ScheduleKind::kPipeDream, 3, 1, 4);
  SimulationInput in = Uniform(s, {1, 2, 0}, 40);
  in.stages[1] = {2, 3, 0};  // the slowest: F + B = 5
  in.send_activation_ms = {0.25, 0.5};
  EXPECT_EQ(Simulated(in).steady_step_ms, 4 * 5.0);
}

TEST(Simulator, FlushingScheduleStepsAreSeparatedByABarrier) {
  Schedule s = Generated(ScheduleKind::k1F1B, 4, 1, 8);
  SimulationResult one = Simulated(Uniform(s, {1, 2, 0}));
  SimulationResult three = Simulated(Uniform(s, {1, 2, 0}, 3));
  EXPECT_EQ(three.makespan_ms, 3 * one.makespan_ms);
  EXPECT_EQ(three.steady_step_ms, one.makespan_ms);
  EXPECT_EQ(three.bubble_fraction, one.bubble_fraction);
  ASSERT_EQ(three.events.size(), 3 * one.events.size());
  const TimelineEvent& last = three.events.back();
  EXPECT_EQ(last.action.micro_batch, 2 * 8 + one.events.back().action.micro_batch);
  EXPECT_EQ(last.end_ms, 2 * one.makespan_ms + one.events.back().end_ms);
}

// Two stages, unequal, with links: 1F1B, m = 2.
//   position 0: 0F0 0F1 0B0 0B1    stage 0: F 1, B 2
//   position 1: 1F0 1B0 1F1 1B1    stage 1: F 2, B 3; send 0 -> 1 takes 0.5 each way
// 0F0 [0, 1]   0F1 [1, 2]   1F0 [1.5, 3.5]   1B0 [3.5, 6.5]   1F1 [6.5, 8.5] (input at 2.5)
// 0B0 [7, 9] (gradient at 6.5 + 0.5)   1B1 [8.5, 11.5]   0B1 [12, 14]
// Makespan 14; busy 6 and 10; idle 8 + 4 = 12 of 2 × 14: bubble 3/7.
TEST(Simulator, UnequalStagesWithLinksMatchAHandComputedTimeline) {
  Schedule s = Generated(ScheduleKind::k1F1B, 2, 1, 2);
  SimulationInput in;
  in.schedule = &s;
  in.stages = {{1, 2, 0}, {2, 3, 0}};
  in.send_activation_ms = {0.5};
  SimulationResult r = Simulated(in);
  EXPECT_EQ(r.makespan_ms, 14);
  EXPECT_EQ(r.bubble_fraction, 3.0 / 7);
  EXPECT_EQ(r.lanes[0].busy_ms, 6);
  EXPECT_EQ(r.lanes[0].idle_ms, 8);
  EXPECT_EQ(r.lanes[1].busy_ms, 10);
  EXPECT_EQ(r.lanes[1].idle_ms, 4);
  EXPECT_EQ(r.lanes[0].end_ms, 14);
  EXPECT_EQ(r.lanes[1].end_ms, 11.5);
  EXPECT_EQ(r.lanes[1].position, 1);
  EXPECT_EQ(r.lanes[1].replica, 0);
  EXPECT_EQ(r.lanes[1].micro_batches, 2);
  EXPECT_EQ(r.lanes[0].peak_live_activations, 2);
  EXPECT_EQ(r.lanes[1].peak_live_activations, 1);
  std::vector<std::pair<double, double>> want = {{0, 1},     {1, 2},     {7, 9},     {12, 14},
                                                 {1.5, 3.5}, {3.5, 6.5}, {6.5, 8.5}, {8.5, 11.5}};
  ASSERT_EQ(r.events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(ActionToString(r.events[i].action));
    EXPECT_EQ(r.events[i].lane, i < 4 ? 0 : 1);
    EXPECT_EQ(r.events[i].start_ms, want[i].first);
    EXPECT_EQ(r.events[i].end_ms, want[i].second);
  }
  EXPECT_EQ(r.events[2].action, (Action{ActionKind::kBackward, 0, 0}));
}

TEST(Simulator, DeadlockIsAnErrorNotAHang) {
  Schedule s{ScheduleKind::k1F1B, 2, 1, 2, false, {}};
  s.positions = {{{ActionKind::kForward, 0, 0},
                  {ActionKind::kBackward, 0, 0},
                  {ActionKind::kForward, 0, 1},
                  {ActionKind::kBackward, 0, 1}},
                 {{ActionKind::kForward, 1, 1},
                  {ActionKind::kBackward, 1, 1},
                  {ActionKind::kForward, 1, 0},
                  {ActionKind::kBackward, 1, 0}}};
  EXPECT_EQ(ErrorOf(Uniform(s, {1, 2, 0})),
            "simulate: position 0, action 1 (0B0): waits for 1B0, which never runs (deadlock)");
}

TEST(Simulator, BadInputsAreExplained) {
  Schedule s = Generated(ScheduleKind::k1F1B, 2, 1, 2);
  SimulationInput in = Uniform(s, {1, 2, 0});
  in.stages.pop_back();
  EXPECT_EQ(ErrorOf(in), "simulate: 1 stage times for 2 stages");
  in = Uniform(s, {1, 2, 0});
  in.send_activation_ms.clear();
  EXPECT_EQ(ErrorOf(in),
            "simulate: 0 send times for 1 stage boundaries; hint: give one per stage but the last");
  in = Uniform(s, {1, 2, 0.5});
  EXPECT_EQ(ErrorOf(in),
            "simulate: stage 0 has weight_ms 0.500000 but 1f1b: pp 2, virtual_stages 1, 2 "
            "micro-batches does not split backward; hint: add it to bwd_ms");
  in = Uniform(s, {-1, 2, 0});
  EXPECT_NE(ErrorOf(in).find("stage 0: times must be finite and >= 0"), std::string::npos);
  in = Uniform(s, {1, 2, 0}, 0);
  EXPECT_EQ(ErrorOf(in), "simulate: steps must be >= 1, got 0");
  in.schedule = nullptr;
  EXPECT_EQ(ErrorOf(in), "simulate: no schedule given");
}

TEST(Simulator, ChromeTraceHasOneEventPerAction) {
  Schedule s = Generated(ScheduleKind::kZbH1, 3, 1, 4);
  SimulationResult r = Simulated(Uniform(s, {1, 1, 1}));
  nlohmann::json trace = nlohmann::json::parse(TimelineToChromeTrace(r));
  int complete = 0;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++complete;
    EXPECT_EQ(e.at("pid"), 0);
    EXPECT_EQ(e.at("dur").get<double>(), 1000.0);  // 1 ms in microseconds
  }
  EXPECT_EQ(complete, 3 * 3 * 4);
  EXPECT_EQ(trace.at("traceEvents").at(2).at("args").at("name"), "position 2 replica 0");
  const nlohmann::json& first = trace.at("traceEvents").at(3);  // after 3 thread names
  EXPECT_EQ(first.at("name"), ActionToString(r.events[0].action));
  EXPECT_EQ(first.at("tid"), r.events[0].lane);
  EXPECT_EQ(first.at("ts").get<double>(), r.events[0].start_ms * 1000);
  EXPECT_EQ(first.at("args").at("stage"), r.events[0].action.stage);
  EXPECT_EQ(first.at("args").at("micro_batch"), r.events[0].action.micro_batch);
}

}  // namespace
}  // namespace trident
