// Simulator inputs the simulator tests share: every stage with the same times, free links.
#pragma once

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "planner/simulator.h"

namespace trident {

// Equal stages, free links; `replicas` per position (empty: one each).
inline SimulationInput Uniform(const Schedule& s, StageTimes times, int steps = 1,
                               std::vector<int> replicas = {}) {
  SimulationInput in;
  in.schedule = &s;
  in.stages.assign(s.NumStages(), times);
  in.send_activation_ms.assign(s.NumStages() - 1, 0.0);
  in.replicas = std::move(replicas);
  in.steps = steps;
  return in;
}

// The simulation, or an empty result with a test failure.
inline SimulationResult Simulated(const SimulationInput& in) {
  StatusOr<SimulationResult> r = Simulate(in);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimulationResult{};
}

}  // namespace trident
