// The timing engine of planner/simulator.h: replays lanes (core/replica_lanes.h) under the
// dependency rules of core/schedule.h, each lane sequential, each action starting once its
// lane is free and its inputs have arrived (see simulator.h for the rules and send times).
//
// The replay is event driven: a lane runs until its next action waits for an input, and is
// woken when that input ends, so the cost is linear in the number of actions whatever the
// number of lanes; the order it meets the actions is found once (LaneReplay) and each set of
// times is one pass over it.
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <string>
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

// The order in which a replay meets the actions of some lanes, and for each action the places
// of its inputs in that order. Which inputs an action waits for depends on the lists alone, not
// on the times, so the order is found once (event driven: a lane runs until its next action's
// inputs have not run yet, and is woken when they have) and every replay of the same lanes is
// then one pass over it, whatever the times.
class LaneReplay {
 public:
  // REQUIRES: `frame` (only its stage count and micro-batch count are read) covers every action
  // of `lanes` and each action appears at most once. InvalidArgument when the lanes wait on
  // each other forever, naming the first stuck lane, its action and the input it waits for:
  //   "position 0 replica 0, action 3 (0B0) waits for 1B0 (position 1 replica 0, action 2),
  //    which never runs (deadlock)"   (1F1B, pp 3, M 6, replicas {1, 3, 1})
  static StatusOr<LaneReplay> Create(const Schedule& frame, const std::vector<Lane>& lanes);

  // The lanes' times. REQUIRES: input's stage and send times have one entry per stage and
  // boundary of the frame.
  LaneTimes Times(const SimulationInput& input) const;

 private:
  struct Step {
    int lane = 0;
    Action action;
    std::array<int, 2> inputs = {-1, -1};    // places in steps_ of the inputs; -1: none
    std::array<int, 2> boundary = {-1, -1};  // the send each input crosses; -1: none
  };
  std::vector<Step> steps_;
  std::vector<size_t> lane_sizes_;
};

// LaneReplay::Create(frame, lanes), then Times(input).
StatusOr<LaneTimes> ReplayLanes(const Schedule& frame, const SimulationInput& input,
                                const std::vector<Lane>& lanes);

// What Simulate needs of a pipeline that its times do not change, for `steps` steps: the
// lanes (PipelineLanes of every position), whether they split backward, each lane's peak live
// activations, and the replay order of the lanes it replays (all of them, or, where every
// position has the same r and r divides M, replica 0's, whose times the other replicas copy).
// A ScheduleCache keeps it for the next pipeline of the same shape.
struct PreparedLanes {
  std::vector<Lane> lanes;
  bool split_backward = false;
  std::vector<int> peak_live;  // per lane
  bool copies_replica_zero = false;
  LaneReplay replay;
};

// Validates input's schedule where it is not replicated (ValidateSchedule), makes its lanes and
// their replay order; InvalidArgument as those do (a deadlock with a hint to try other replica
// counts).
StatusOr<PreparedLanes> PrepareLanes(const SimulationInput& input, int steps);

// The times of every lane of `prepared` under `input`'s stage and send times.
LaneTimes PreparedTimes(const PreparedLanes& prepared, const SimulationInput& input);

}  // namespace trident
