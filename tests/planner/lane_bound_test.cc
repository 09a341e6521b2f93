// The makespan lower bounds planner/evaluate.h documents for a search to prune with, checked
// on random stage times, link times and replica counts: for every lane of stage s with m
// micro-batches, makespan >= Σ_{q<s}(F_q + B_q + 2·send_q) + m·(F_s + B_s) when backward is not
// split, and Σ_{q<s}(F_q + send_q) + m·(F_s + B_s + W_s) when it is.
#include <gtest/gtest.h>

#include <random>

#include "planner/simulator.h"

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

}  // namespace
}  // namespace trident
