// The schedule simulator: replays a schedule's exact per-position action lists with
// per-stage compute times and per-boundary link times, and reports the makespan, the idle
// (bubble) fraction, per-position busy/idle time and peak live activations, and the timeline.
// It is the source of truth for unequal stages; on equal stages it reproduces the closed
// forms of DESIGN.md §5 exactly (see the generators' comments in core/schedule.cc).
//
// Semantics. Each position runs its actions in list order, one at a time. An action starts
// when its position is free and its inputs have arrived:
//   F(s, j) at  end F(s-1, j) + send_activation_ms[s-1]      (nothing for s = 0)
//   B(s, j) at  end B(s+1, j) + send_activation_ms[s]        (nothing for the last stage)
//           and end F(s, j)
//   W(s, j) at  end B(s, j)
// Sends are asynchronous: they delay the receiver only, never the sender; a gradient crosses
// a boundary in the same time as the activation. Time starts at 0; results are deterministic.
//
// Several steps: a flushing schedule ends each step with a barrier (the optimizer step), so
// step k starts when step k-1 has ended everywhere and steady_step_ms = the one-step makespan.
// PipeDream runs its steps back to back without a flush (core's UnrollSteps), micro-batch j of
// step k being k·m + j; its steady_step_ms = makespan(steps) - makespan(steps - 1), which is
// m·(F+B) of the slowest stage in the steady state.
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

struct SimulationInput {
  const Schedule* schedule = nullptr;
  std::vector<StageTimes> stages;          // one per global stage
  std::vector<double> send_activation_ms;  // one per boundary s -> s+1, s < NumStages() - 1
  int steps = 1;                           // consecutive steps to replay
};

struct PositionStats {
  double busy_ms = 0;
  double idle_ms = 0;  // makespan - busy
  // The most micro-batches whose F has run on this position and whose B (W when split) has
  // not yet finished, counted per stage chunk held.
  int peak_live_activations = 0;
};

struct TimelineEvent {
  int position = 0;
  Action action;
  double start_ms = 0;
  double end_ms = 0;
};

struct SimulationResult {
  double makespan_ms = 0;
  double bubble_fraction = 0;  // total idle / (positions × makespan)
  std::vector<PositionStats> positions;
  std::vector<TimelineEvent> events;  // position by position, each in list order
  double steady_step_ms = 0;          // time per step once running; makespan when steps == 1
};

// InvalidArgument for a missing schedule, an invalid schedule (ValidateSchedule's error,
// deadlock included: never a hang), sizes that do not match the schedule, negative or
// non-finite times, weight_ms on a schedule that does not split backward, or steps < 1.
StatusOr<SimulationResult> Simulate(const SimulationInput& input);

// Chrome trace JSON (opens in Perfetto / chrome://tracing): one complete event ("ph": "X")
// per action with "ts"/"dur" in microseconds, "pid" 0, "tid" = position, "name" like "1F3"
// and "args" {stage, micro_batch}; plus one "thread_name" metadata event per position.
std::string TimelineToChromeTrace(const SimulationResult& result);

}  // namespace trident
