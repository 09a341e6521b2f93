// The simulator on replicated pipelines: every round-robin lane of core/replica_lanes.h is
// replayed, identical replicas take a shortcut that gives the same numbers, and lanes that
// wait on each other forever are an error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "core/replica_lanes.h"
#include "planner/lane_replay.h"
#include "planner/simulator.h"
#include "simulation_inputs.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

// The header of a step of `kind` over m micro-batches; the simulator reads no lists of it
// when the pipeline is replicated.
Schedule Header(ScheduleKind kind, int pp, int v, int m) {
  return {kind, pp, v, m, kind == ScheduleKind::kZbH1, {}};
}

SimulationInput Input(const Schedule& s, StageTimes times, std::vector<int> replicas,
                      int steps = 1) {
  return Uniform(s, times, steps, std::move(replicas));
}

// 1F1B, pp 2, M 4, replicas {3, 1}, F = B = 1, free links.
//   lane 0 (position 0 replica 0): 0F0 [0, 1]  0F3 [1, 2]  0B0 [3, 4]  0B3 [9, 10]
//   lane 1 (position 0 replica 1): 0F1 [0, 1]  0B1 [5, 6]
//   lane 2 (position 0 replica 2): 0F2 [0, 1]  0B2 [7, 8]
//   lane 3 (position 1):           1F0 [1, 2]  1B0 [2, 3]  1F1 [3, 4]  1B1 [4, 5]
//                                  1F2 [5, 6]  1B2 [6, 7]  1F3 [7, 8]  1B3 [8, 9]
// Makespan 10; busy 4, 2, 2, 8; idle 6 + 8 + 8 + 2 = 24 of 4 × 10.
TEST(ReplicatedSimulation, ThreeAndOneReplicasMatchAHandComputedTimeline) {
  Schedule s = Header(ScheduleKind::k1F1B, 2, 1, 4);
  SimulationResult r = Simulated(Input(s, {1, 1, 0}, {3, 1}));
  EXPECT_EQ(r.makespan_ms, 10);
  EXPECT_EQ(r.bubble_fraction, 24.0 / 40);
  ASSERT_EQ(r.lanes.size(), 4u);
  const int want_position[] = {0, 0, 0, 1}, want_replica[] = {0, 1, 2, 0};
  const int want_micro_batches[] = {2, 1, 1, 4}, want_peak[] = {2, 1, 1, 1};
  const double want_busy[] = {4, 2, 2, 8}, want_end[] = {10, 6, 8, 9};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r.lanes[i].position, want_position[i]);
    EXPECT_EQ(r.lanes[i].replica, want_replica[i]);
    EXPECT_EQ(r.lanes[i].micro_batches, want_micro_batches[i]);
    EXPECT_EQ(r.lanes[i].busy_ms, want_busy[i]);
    EXPECT_EQ(r.lanes[i].idle_ms, 10 - want_busy[i]);
    EXPECT_EQ(r.lanes[i].end_ms, want_end[i]);
    EXPECT_EQ(r.lanes[i].peak_live_activations, want_peak[i]);
  }
  const std::vector<std::string> lane0 = {"0F0", "0F3", "0B0", "0B3"};
  const double lane0_start[] = {0, 1, 3, 9};
  for (size_t k = 0; k < lane0.size(); ++k) {
    EXPECT_EQ(r.events[k].lane, 0);
    EXPECT_EQ(ActionToString(r.events[k].action), lane0[k]);
    EXPECT_EQ(r.events[k].start_ms, lane0_start[k]);
  }
  EXPECT_EQ(r.events.size(), 16u);
  EXPECT_EQ(r.events.back().lane, 3);
  EXPECT_EQ(ActionToString(r.events.back().action), "1B3");
  // simulator.h's worked example: F = 1, B = 2.
  SimulationResult example = Simulated(Input(s, {1, 2, 0}, {3, 1}));
  EXPECT_EQ(example.makespan_ms, 15);
  EXPECT_EQ(example.lanes[0].busy_ms, 6);
  EXPECT_EQ(example.lanes[3].end_ms, 13);
}

// One replica per position is the schedule's own lists, and a hand-written list still runs.
TEST(ReplicatedSimulation, OneReplicaEachReplaysTheScheduleAsWritten) {
  StatusOr<Schedule> s = ParseScheduleText("0F0 0F1 0B1 0B0\n1F0 1F1 1B1 1B0\n", "x.sched",
                                           ScheduleKind::kGpipe, 2, 1, 2, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  SimulationResult r = Simulated(Input(*s, {1, 2, 0}, {1, 1}));
  ASSERT_EQ(r.lanes.size(), 2u);
  EXPECT_EQ(ActionToString(r.events[2].action), "0B1");
  EXPECT_EQ(r.makespan_ms, Simulated(Input(*s, {1, 2, 0}, {})).makespan_ms);
}

// Random stage and link times: the shortcut for identical replicas gives the same events,
// bit for bit, as replaying every lane (ReplayLanes over all of them).
TEST(ReplicatedSimulation, IdenticalReplicasShortcutEqualsTheFullReplay) {
  struct Case {
    ScheduleKind kind;
    int pp, v, m, r, steps;
  };
  const Case cases[] = {
      {ScheduleKind::kGpipe, 3, 1, 6, 2, 1}, {ScheduleKind::k1F1B, 4, 1, 12, 3, 1},
      {ScheduleKind::kZbH1, 3, 1, 8, 4, 1},  {ScheduleKind::kInterleaved1F1B, 2, 2, 8, 2, 1},
      {ScheduleKind::k1F1B, 2, 1, 4, 2, 3},  {ScheduleKind::kPipeDream, 3, 1, 6, 3, 4}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> ms(0.1, 3.0);
  for (const Case& c : cases) {
    Schedule s = Header(c.kind, c.pp, c.v, c.m);
    SCOPED_TRACE(s.ToString() + ", steps " + std::to_string(c.steps));
    SimulationInput in = Input(s, {}, std::vector<int>(c.pp, c.r), c.steps);
    for (StageTimes& t : in.stages) t = {ms(rng), ms(rng), s.split_backward ? ms(rng) : 0};
    for (double& send : in.send_activation_ms) send = ms(rng) / 4;
    SimulationResult fast = Simulated(in);

    const int replayed_steps = s.Flushes() ? 1 : c.steps;
    StatusOr<std::vector<Lane>> lanes =
        ReplicaLanes(c.kind, c.pp, c.v, c.m, in.replicas, replayed_steps);
    ASSERT_TRUE(lanes.ok()) << lanes.status().ToString();
    Schedule frame = Header(c.kind, c.pp, c.v, c.m * replayed_steps);
    StatusOr<LaneTimes> full = ReplayLanes(frame, in, *lanes);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    ASSERT_EQ(fast.lanes.size(), lanes->size());
    size_t e = 0;
    for (size_t i = 0; i < lanes->size(); ++i) {
      for (size_t k = 0; k < (*lanes)[i].actions.size(); ++k, ++e) {
        ASSERT_LT(e, fast.events.size());
        EXPECT_EQ(fast.events[e].lane, static_cast<int>(i));
        EXPECT_EQ(fast.events[e].action, (*lanes)[i].actions[k]);
        EXPECT_EQ(fast.events[e].start_ms, (*full)[i][k].start_ms);
        EXPECT_EQ(fast.events[e].end_ms, (*full)[i][k].end_ms);
      }
      if (replayed_steps == c.steps) {
        EXPECT_EQ(fast.lanes[i].end_ms, (*full)[i].back().end_ms);
      }
    }
    EXPECT_EQ(e * c.steps / replayed_steps, fast.events.size());
  }
}

// Flushing steps tile one step, PipeDream steps stream; the steady PipeDream step is the
// busiest lane's compute: position 1's one lane runs all M micro-batches.
TEST(ReplicatedSimulation, StepsTileOrStream) {
  Schedule s = Header(ScheduleKind::k1F1B, 2, 1, 4);
  SimulationResult one = Simulated(Input(s, {1, 1, 0}, {3, 1}));
  SimulationResult two = Simulated(Input(s, {1, 1, 0}, {3, 1}, 2));
  EXPECT_EQ(two.makespan_ms, 2 * one.makespan_ms);
  EXPECT_EQ(two.steady_step_ms, one.makespan_ms);
  EXPECT_EQ(two.lanes[1].end_ms, one.makespan_ms + one.lanes[1].end_ms);
  EXPECT_EQ(two.lanes[3].busy_ms, 2 * one.lanes[3].busy_ms);
  EXPECT_EQ(two.events.back().action.micro_batch, 4 + 3);

  Schedule async = Header(ScheduleKind::kPipeDream, 2, 1, 4);
  SimulationResult streamed = Simulated(Input(async, {1, 2, 0}, {2, 1}, 20));
  EXPECT_EQ(streamed.steady_step_ms, 4 * 3.0);
  EXPECT_EQ(streamed.lanes[0].micro_batches, 2);
  EXPECT_EQ(streamed.lanes[0].busy_ms, 20 * 2 * 3.0);
}

// 1F1B, pp 3, M 6, replicas {1, 3, 1}: position 0 warms up with 0F0 0F1 0F2 and then needs
// 1B0 before 0F3, while position 1's replica 0 (micro-batches 0 and 3) runs 1F0 1F3 1B0.
// Replicas {1, 3, 1} of 6 micro-batches: position 1's lanes would wait for forwards position 0
// runs only after their backwards, so the lanes warm up less (core/replica_lanes.h) and run.
TEST(ReplicatedSimulation, LanesWarmUpNoMoreThanThePositionsBeforeThemFeed) {
  Schedule s = Header(ScheduleKind::k1F1B, 3, 1, 6);
  StatusOr<SimulationResult> r = Simulate(Input(s, {1, 2, 0}, {1, 3, 1}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->lanes.size(), 5u);
  EXPECT_GE(r->makespan_ms, 6 * 3.0);  // the unreplicated positions run every micro-batch
}

TEST(ReplicatedSimulation, BadReplicasAreExplained) {
  Schedule s = Header(ScheduleKind::k1F1B, 2, 1, 4);
  StatusOr<SimulationResult> r = Simulate(Input(s, {1, 2, 0}, {2}));
  EXPECT_EQ(r.status().message(), "simulate: 1 replica counts for 2 pipeline positions");
  r = Simulate(Input(s, {1, 2, 0}, {5, 1}));
  EXPECT_THAT(r.status().message(), HasSubstr("simulate: pipeline position 0 has 5 replicas"));
  r = Simulate(Input(s, {1, 2, 0.5}, {2, 1}));
  EXPECT_THAT(r.status().message(), HasSubstr("does not split backward"));
  Schedule interleaved = Header(ScheduleKind::kInterleaved1F1B, 2, 2, 6);
  r = Simulate(Input(interleaved, {1, 2, 0}, {2, 2}));
  EXPECT_THAT(r.status().message(), HasSubstr("(3 micro-batches on replica 0)"));
}

}  // namespace
}  // namespace trident
