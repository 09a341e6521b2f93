// The schedule simulator: replays the exact action lists of every lane of a pipeline (one
// lane per replica of each position) with per-stage compute times and per-boundary link
// times, and reports the makespan, the idle (bubble) fraction, per-lane busy/idle time, end
// and peak live activations, and the timeline. It is the source of truth for unequal stages
// and unequal replication; on equal stages it reproduces the closed forms of DESIGN.md §5
// exactly (see the generators' comments in core/schedule.cc).
//
// Lanes. Without replication (replicas empty or all 1) position p is one lane running the
// schedule's own list p, so a hand-written schedule simulates as written. With replication the
// lanes are core/replica_lanes.h's round robin over the schedule's num_micro_batches M (the
// whole step's): replica d of position p runs the kind's list for its ceil((M - d) / r_p)
// micro-batches, local micro-batch i being global i·r_p + d; only the schedule's kind, pp,
// virtual_stages and num_micro_batches are read then, not its lists. When every position has
// the same r and r divides M, replica d's lanes are replica 0's with other micro-batch ids, so
// only replica 0's are replayed and their times copied: the same numbers as a full replay.
//
// Semantics. Each lane runs its actions in list order, one at a time. An action starts when
// its lane is free and its inputs have arrived (global micro-batch ids, whichever lane ran
// the input):
//   F(s, j) at  end F(s-1, j) + send_activation_ms[s-1]      (nothing for s = 0)
//   B(s, j) at  end B(s+1, j) + send_activation_ms[s]        (nothing for the last stage)
//           and end F(s, j)
//   W(s, j) at  end B(s, j)
// Sends are asynchronous: they delay the receiver only, never the sender; a gradient crosses
// a boundary in the same time as the activation. Time starts at 0; results are deterministic.
// Lanes that wait on each other forever (a deadlock: round-robin lanes of some replica counts
// can) are an InvalidArgument naming the lane, the action and what it waits for.
//
// Worked example: 1F1B, pp 2, M 4, replicas {3, 1}, F = 1 and B = 2 on both stages, free
// links. Position 0's replica 0 runs 0F0 0F3 0B0 0B3, replicas 1 and 2 run 0F1 0B1 and
// 0F2 0B2, all forwards done by t = 2; position 1 runs 1F0 1B0 1F1 1B1 ... 1F3 1B3 back to
// back from t = 1 to 13, and 0B3 follows 1B3 at [13, 15]: makespan 15, busy 6, 3, 3 and 12.
//
// Several steps: a flushing schedule ends each step with a barrier (the optimizer step), so
// step k starts when step k-1 has ended everywhere and steady_step_ms = the one-step makespan.
// PipeDream runs its steps back to back without a flush (core's UnrollSteps), micro-batch j of
// step k being k·M + j; its steady_step_ms = makespan(steps) - makespan(steps - 1), which is
// m·(F+B) of the slowest lane in the steady state.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/schedule.h"
#include "core/status.h"

namespace trident {

struct StageTimes {
  double fwd_ms = 0;
  double bwd_ms = 0;     // input gradient when the schedule splits backward, else all of it
  double weight_ms = 0;  // weight gradient; must be 0 when the schedule does not split
};

class ScheduleCache;

struct SimulationInput {
  const Schedule* schedule = nullptr;
  std::vector<StageTimes> stages;          // one per global stage
  std::vector<double> send_activation_ms;  // one per boundary s -> s+1, s < NumStages() - 1
  std::vector<int> replicas;               // one per position, 1..M; empty: one replica each
  int steps = 1;                           // consecutive steps to replay
  bool timeline = true;                    // false: SimulationResult::events left empty
  // Keeps the lanes of a generated schedule for the next simulation of the same shape
  // (planner/schedule_cache.h); null: made for this one.
  ScheduleCache* cache = nullptr;
};

struct LaneStats {
  int position = 0;
  int replica = 0;
  int micro_batches = 0;  // of one step
  double busy_ms = 0;
  double idle_ms = 0;  // makespan - busy
  double end_ms = 0;   // when its last action ended
  // The most micro-batches whose F has run on this lane and whose B (W when split) has not
  // yet finished, counted per stage chunk held.
  int peak_live_activations = 0;
};

struct TimelineEvent {
  int lane = 0;  // index into SimulationResult::lanes
  Action action;
  double start_ms = 0;
  double end_ms = 0;
};

struct SimulationResult {
  double makespan_ms = 0;
  double bubble_fraction = 0;         // total idle / (lanes × makespan)
  std::vector<LaneStats> lanes;       // position by position, replicas in order
  std::vector<TimelineEvent> events;  // lane by lane, each in list order
  double steady_step_ms = 0;          // time per step once running; makespan when steps == 1
};

// InvalidArgument for a missing schedule, an invalid schedule (ValidateSchedule's error,
// deadlock included: never a hang), sizes that do not match the schedule, replica counts
// that ReplicaLanes refuses, lanes that deadlock, negative or non-finite times, weight_ms on a
// schedule that does not split backward, or steps < 1.
StatusOr<SimulationResult> Simulate(const SimulationInput& input);

// Chrome trace JSON (opens in Perfetto / chrome://tracing): one complete event ("ph": "X")
// per action with "ts"/"dur" in microseconds, "pid" 0, "tid" = lane index, "name" like "1F3"
// and "args" {stage, micro_batch}; plus one "thread_name" metadata event per lane, named
// "position p replica d".
std::string TimelineToChromeTrace(const SimulationResult& result);

}  // namespace trident
