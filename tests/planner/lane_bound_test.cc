// The makespan lower bounds a search prunes with, checked against the simulator on random stage
// times, link times and replica counts: planner/evaluate.h's simple bound for every lane of
// stage s with m micro-batches (Σ_{q<s}(F_q + B_q + 2·send_q) + m·(F_s + B_s) when backward is
// not split, Σ_{q<s}(F_q + send_q) + m·(F_s + B_s + W_s) when it is), planner/lane_bound.h's
// round-trip lane bounds and pair bound of every two positions, and planner/window_bound.h's
// bound of every window.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/replica_lanes.h"
#include "planner/lane_bound.h"
#include "planner/simulator.h"
#include "planner/window_bound.h"

namespace trident {
namespace {

struct Instance {
  Schedule header;
  SimulationInput input;
};

Instance RandomInstance(ScheduleKind kind, std::mt19937* rng) {
  std::uniform_int_distribution<int> pp_of(1, 4), m_of(1, 8);
  std::uniform_real_distribution<double> ms(0.05, 3.0), send_ms(0.0, 1.0);
  const int pp = pp_of(*rng), m = m_of(*rng);
  Instance out;
  out.header = *GenerateSchedule(kind, pp, 1, m);  // its lists run when no position replicates
  std::uniform_int_distribution<int> replicas_of(1, m);
  for (int p = 0; p < pp; ++p) {
    out.input.stages.push_back({ms(*rng), ms(*rng), kind == ScheduleKind::kZbH1 ? ms(*rng) : 0});
    out.input.replicas.push_back(replicas_of(*rng));
    if (p + 1 < pp) out.input.send_activation_ms.push_back(send_ms(*rng));
  }
  return out;
}

double LaneBoundMs(const SimulationInput& in, bool split, const LaneStats& lane) {
  double bound_ms = 0;
  for (int q = 0; q < lane.position; ++q) {
    const StageTimes& t = in.stages[q];
    const double send = in.send_activation_ms[q];
    bound_ms += split ? t.fwd_ms + send : t.fwd_ms + t.bwd_ms + 2 * send;
  }
  const StageTimes& t = in.stages[lane.position];
  return bound_ms + lane.micro_batches * (t.fwd_ms + t.bwd_ms + t.weight_ms);
}

TEST(LaneBound, MakespanIsAtLeastEveryLanesBound) {
  const ScheduleKind kinds[] = {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1,
                                ScheduleKind::kPipeDream};
  std::mt19937 rng(20);
  for (ScheduleKind kind : kinds) {
    int simulated = 0, tight = 0;
    for (int trial = 0; trial < 400; ++trial) {
      Instance x = RandomInstance(kind, &rng);
      x.input.schedule = &x.header;
      StatusOr<SimulationResult> r = Simulate(x.input);
      if (!r.ok()) {  // lanes that cannot run together: no makespan to bound
        ASSERT_NE(r.status().message().find("(deadlock)"), std::string::npos)
            << r.status().ToString();
        continue;
      }
      ++simulated;
      double best_bound_ms = 0;
      for (const LaneStats& lane : r->lanes) {
        double bound_ms = LaneBoundMs(x.input, x.header.split_backward, lane);
        EXPECT_GE(r->makespan_ms * (1 + 1e-12), bound_ms)
            << x.header.ToString() << " lane at position " << lane.position << " replica "
            << lane.replica;
        best_bound_ms = std::max(best_bound_ms, bound_ms);
      }
      tight += r->makespan_ms <= best_bound_ms * (1 + 1e-12);
    }
    // Most instances run, and the bound is reached on some: it is not vacuous.
    EXPECT_GT(simulated, 200) << NameOf(ScheduleKindNames(), kind);
    EXPECT_GT(tight, 0) << NameOf(ScheduleKindNames(), kind);
  }
}

// planner/lane_bound.h's bounds for lane `lane`, from the instance's own stage and link times.
LaneBound RoundTripBound(const Instance& x, const std::vector<int>& warm_ups,
                         const LaneStats& lane) {
  const SimulationInput& in = x.input;
  const int s = lane.position, pp = static_cast<int>(in.stages.size());
  LaneBoundInput b;
  b.kind = x.header.kind;
  b.pp = pp;
  b.micro_batches = lane.micro_batches;
  b.warm_up = warm_ups[s];
  b.stage = in.stages[s];
  for (int q = 0; q < s; ++q) {
    b.arrive_ms += in.stages[q].fwd_ms + in.send_activation_ms[q];
    b.drain_ms += in.stages[q].bwd_ms + in.send_activation_ms[q];
  }
  if (x.header.split_backward && s > 0) b.drain_ms += in.stages[0].weight_ms;
  for (int q = s + 1; q < pp; ++q) b.round_trip_ms += in.stages[q].fwd_ms + in.stages[q].bwd_ms;
  for (int q = s; q + 1 < pp; ++q) b.round_trip_ms += 2 * in.send_activation_ms[q];
  return LaneBoundOf(b);
}

// Each position's warm-up under core/replica_lanes.h's rule.
std::vector<int> WarmUpsOf(const Instance& x) {
  WarmUpRule rule;
  std::vector<int> warm_ups;
  for (int p = 0; p < x.header.pp; ++p) {
    warm_ups.push_back(rule.Next(x.header.pp, p, x.header.num_micro_batches,
                                 x.input.replicas[static_cast<size_t>(p)]));
  }
  return warm_ups;
}

TEST(LaneBound, RoundTripBoundsHoldForEveryLane) {
  const ScheduleKind kinds[] = {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1};
  std::mt19937 rng(21);
  for (ScheduleKind kind : kinds) {
    int simulated = 0, tight = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      Instance x = RandomInstance(kind, &rng);
      x.input.schedule = &x.header;
      StatusOr<SimulationResult> r = Simulate(x.input);
      if (!r.ok()) continue;  // deadlocked lanes, as above
      ++simulated;
      const std::vector<int> warm_ups = WarmUpsOf(x);
      double best_bound_ms = 0;
      for (const LaneStats& lane : r->lanes) {
        const LaneBound bound = RoundTripBound(x, warm_ups, lane);
        EXPECT_GE(r->makespan_ms * (1 + 1e-12), bound.makespan_ms)
            << x.header.ToString() << " lane at position " << lane.position << " replica "
            << lane.replica;
        EXPECT_GE(lane.end_ms * (1 + 1e-12), bound.lane_end_ms)
            << x.header.ToString() << " lane at position " << lane.position << " replica "
            << lane.replica;
        best_bound_ms = std::max(best_bound_ms, bound.makespan_ms);
      }
      tight += r->makespan_ms <= best_bound_ms * (1 + 1e-12);
      if (testing::Test::HasFailure()) return;
    }
    // The bound is the makespan on many instances (free of the simple bound's gap).
    EXPECT_GT(simulated, 1000) << NameOf(ScheduleKindNames(), kind);
    EXPECT_GT(tight, simulated / 4) << NameOf(ScheduleKindNames(), kind);
  }
}

// planner/lane_bound.h's pair bound for positions p < t of the instance, those between folded
// into t's side.
double PairBound(const Instance& x, const std::vector<int>& warm_ups, int p, int t) {
  const SimulationInput& in = x.input;
  const int pp = static_cast<int>(in.stages.size());
  PairBoundInput b;
  b.micro_batches = x.header.num_micro_batches;
  b.replicas = in.replicas[static_cast<size_t>(p)];
  b.warm_up = warm_ups[static_cast<size_t>(p)];
  b.next_replicas = in.replicas[static_cast<size_t>(t)];
  b.next_warm_up = warm_ups[static_cast<size_t>(t)];
  b.stage = in.stages[p];
  for (int q = p + 1; q <= t; ++q) {
    b.next.fwd_ms += in.stages[q].fwd_ms + (q < t ? in.send_activation_ms[q] : 0);
    b.next.bwd_ms += in.stages[q].bwd_ms + (q < t ? in.send_activation_ms[q] : 0);
  }
  b.send_ms = in.send_activation_ms[p];
  for (int q = 0; q < p; ++q) {
    b.arrive_ms += in.stages[q].fwd_ms + in.send_activation_ms[q];
    b.drain_ms += in.stages[q].bwd_ms + in.send_activation_ms[q];
  }
  if (x.header.split_backward && p > 0) b.drain_ms += in.stages[0].weight_ms;
  for (int q = p + 1; q < pp; ++q) b.round_trip_ms += in.stages[q].fwd_ms + in.stages[q].bwd_ms;
  for (int q = p; q + 1 < pp; ++q) b.round_trip_ms += 2 * in.send_activation_ms[q];
  return PairBoundOf(b);
}

// Deeper pipelines, more micro-batches and replicas than RandomInstance draws, where neighbouring
// positions' round-robin lanes can wait on each other micro-batch by micro-batch.
Instance RandomDeepInstance(ScheduleKind kind, std::mt19937* rng) {
  std::uniform_int_distribution<int> pp_of(2, 8), m_of(2, 60);
  std::uniform_real_distribution<double> ms(0.05, 3.0), send_ms(0.0, 0.5);
  const int pp = pp_of(*rng), m = m_of(*rng);
  Instance out;
  out.header = *GenerateSchedule(kind, pp, 1, m);
  std::uniform_int_distribution<int> replicas_of(1, std::min(m, 12));
  for (int p = 0; p < pp; ++p) {
    out.input.stages.push_back({ms(*rng), ms(*rng), kind == ScheduleKind::kZbH1 ? ms(*rng) : 0});
    out.input.replicas.push_back(replicas_of(*rng));
    if (p + 1 < pp) out.input.send_activation_ms.push_back(send_ms(*rng));
  }
  return out;
}

TEST(LaneBound, PairBoundHoldsForEveryTwoPositions) {
  std::mt19937 rng(22);
  for (ScheduleKind kind : {ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    int simulated = 0, above_lanes = 0, above_neighbours = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      Instance x = RandomDeepInstance(kind, &rng);
      x.input.schedule = &x.header;
      StatusOr<SimulationResult> r = Simulate(x.input);
      if (!r.ok()) continue;
      ++simulated;
      const std::vector<int> warm_ups = WarmUpsOf(x);
      double lanes_ms = 0, pairs_ms = 0;
      for (const LaneStats& lane : r->lanes) {
        lanes_ms = std::max(lanes_ms, RoundTripBound(x, warm_ups, lane).makespan_ms);
      }
      double neighbours_ms = 0;
      for (int p = 0; p + 1 < x.header.pp; ++p) {
        for (int t = p + 1; t < x.header.pp; ++t) {
          const double bound_ms = PairBound(x, warm_ups, p, t);
          EXPECT_GE(r->makespan_ms * (1 + 1e-12), bound_ms)
              << x.header.ToString() << " positions " << p << " and " << t;
          pairs_ms = std::max(pairs_ms, bound_ms);
          if (t == p + 1) neighbours_ms = std::max(neighbours_ms, bound_ms);
        }
      }
      above_neighbours += pairs_ms > neighbours_ms * 1.05;
      above_lanes += pairs_ms > lanes_ms * 1.5;
      if (testing::Test::HasFailure()) return;
    }
    // The pair bound sees waits that no lane's own bound does, on some instances.
    EXPECT_GT(simulated, 1000) << NameOf(ScheduleKindNames(), kind);
    EXPECT_GT(above_lanes, 10) << NameOf(ScheduleKindNames(), kind);
    // Positions further apart see waits that no two neighbours do, on some instances.
    EXPECT_GT(above_neighbours, simulated / 10) << NameOf(ScheduleKindNames(), kind);
  }
}

// Every window of positions bounds the makespan from below, and the whole pipeline as one window
// replays to the makespan itself.
TEST(LaneBound, WindowBoundHoldsForEveryWindow) {
  std::mt19937 rng(23);
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    int simulated = 0, above_pairs = 0;
    for (int trial = 0; trial < 600; ++trial) {
      Instance x = RandomDeepInstance(kind, &rng);
      x.input.schedule = &x.header;
      StatusOr<SimulationResult> r = Simulate(x.input);
      if (!r.ok()) continue;
      ++simulated;
      const std::vector<int> warm_ups = WarmUpsOf(x);
      double pairs_ms = 0, windows_ms = 0;
      for (int p = 0; p + 1 < x.header.pp && kind != ScheduleKind::kGpipe; ++p) {
        for (int t = p + 1; t < x.header.pp; ++t) {
          pairs_ms = std::max(pairs_ms, PairBound(x, warm_ups, p, t));
        }
      }
      for (int first = 0; first < x.header.pp; ++first) {
        for (int last = first; last < x.header.pp; ++last) {
          StatusOr<double> bound_ms = WindowBoundMs(x.input, first, last);
          ASSERT_TRUE(bound_ms.ok()) << bound_ms.status().message();
          if (first == 0 && last == x.header.pp - 1) {
            EXPECT_NEAR(*bound_ms, r->makespan_ms, 1e-9 * r->makespan_ms) << x.header.ToString();
            continue;
          }
          EXPECT_GE(r->makespan_ms * (1 + 1e-12), *bound_ms)
              << x.header.ToString() << " positions " << first << " to " << last;
          if (last - first < 2) windows_ms = std::max(windows_ms, *bound_ms);
        }
      }
      above_pairs += windows_ms > pairs_ms * 1.05;
      if (testing::Test::HasFailure()) return;
    }
    EXPECT_GT(simulated, 500) << NameOf(ScheduleKindNames(), kind);
    // Windows of one or two positions see waits that no pair bound does, on some instances.
    EXPECT_GT(above_pairs, simulated / 10) << NameOf(ScheduleKindNames(), kind);
  }
}

}  // namespace
}  // namespace trident
