// The timing engine of planner/simulator.h: replays lanes (core/replica_lanes.h) under the
// dependency rules of core/schedule.h, each lane sequential, each action starting once its
// lane is free and its inputs have arrived (see simulator.h for the rules and send times).
//
// The replay is event driven: a lane runs until its next action waits for an input, and is
// woken when that input ends, so the cost is linear in the number of actions whatever the
// number of lanes.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

#include "core/replica_lanes.h"
#include "core/schedule.h"
#include "core/status.h"
#include "planner/simulator.h"

namespace trident {

struct ActionInterval {
  double start_ms = 0;
  double end_ms = 0;
};

// Per lane, the interval of each of its actions, in list order.
using LaneTimes = std::vector<std::vector<ActionInterval>>;

// Replication other than one replica per position: the lanes come from ReplicaLanes.
bool Replicated(const SimulationInput& in);

// The lanes Simulate replays for `steps` steps (several only for a schedule without flush):
// the schedule's own lists without replication, else ReplicaLanes'; those of positions
// [first, last] (REQUIRES 0 <= first <= last < pp).
StatusOr<std::vector<Lane>> PipelineLanes(const SimulationInput& in, int steps, int first,
                                          int last);

// REQUIRES: `frame` (only its stage count and micro-batch count are read) covers every action
// of `lanes`, each action appears at most once, and input's stage and send times have one
// entry per stage and boundary of `frame`. InvalidArgument when the lanes wait on each other
// forever, naming the first stuck lane, its action and the input it waits for:
//   "position 0 replica 0, action 3 (0B0) waits for 1B0 (position 1 replica 0, action 2),
//    which never runs (deadlock)"   (1F1B, pp 3, M 6, replicas {1, 3, 1})
StatusOr<LaneTimes> ReplayLanes(const Schedule& frame, const SimulationInput& input,
                                const std::vector<Lane>& lanes);

}  // namespace trident
