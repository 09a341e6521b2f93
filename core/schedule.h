// Pipeline schedules as data: for each pipeline position, the ordered list of compute
// actions it runs in one training step. Generators produce the lists, ValidateSchedule checks
// them, the planner's simulator times them and the runtime interprets them (DESIGN.md §3, §5).
//
// Vocabulary: pp positions, v virtual stages (chunks) per position, m micro-batches per
// pipeline replica. Global stage s = chunk · pp + position, so position p runs stages
// p, p + pp, p + 2·pp, ... Actions: F (forward), B (backward: the input gradient when the
// schedule splits backward, else the whole backward), W (weight gradient; split schedules
// only). Micro-batch ids are 0 .. m-1 within one step.
//
// Dependencies (the same for the validator, the simulator and the runtime):
//   F(s, j) needs F(s-1, j)                  (none for s = 0)
//   B(s, j) needs F(s, j) and B(s+1, j)      (no B(s+1, j) for the last stage)
//   W(s, j) needs B(s, j)
//
// Text form: one line per position, tokens {stage}{F|B|W}{micro_batch} separated by spaces,
// e.g. "0F0 0F1 0B0 0F2 0B1 0B2"; '#' starts a comment; blank lines are ignored.
//
// All functions are pure and thread-safe.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "core/status.h"

namespace trident {

enum class ActionKind { kForward, kBackward, kWeight };

// 'F', 'B' or 'W'.
char ActionKindLetter(ActionKind kind);

struct Action {
  ActionKind kind = ActionKind::kForward;
  int stage = 0;
  int micro_batch = 0;
  bool operator==(const Action&) const = default;
};

// "1F3": stage 1, forward, micro-batch 3.
std::string ActionToString(const Action& action);

struct Schedule {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int pp = 1;
  int virtual_stages = 1;
  int num_micro_batches = 1;
  bool split_backward = false;                 // B is the input gradient and W runs separately
  std::vector<std::vector<Action>> positions;  // positions[p]: what position p runs, in order

  int NumStages() const { return pp * virtual_stages; }
  int PositionOf(int stage) const { return stage % pp; }
  // Every schedule but PipeDream ends a step with a flush: all backward work of step k
  // finishes before step k+1 starts (the optimizer step is a barrier). PipeDream runs steps
  // back to back; see UnrollSteps.
  bool Flushes() const { return kind != ScheduleKind::kPipeDream; }
  // "1f1b: pp 4, virtual_stages 1, 8 micro-batches".
  std::string ToString() const;
  bool operator==(const Schedule&) const = default;
};

// One value per (kind, stage, micro-batch) of a schedule, e.g. where an action sits or when
// it ended. REQUIRES: actions passed to operator[] are in range for the schedule.
template <typename T>
class ActionMap {
 public:
  ActionMap(const Schedule& s, T initial)
      : num_stages_(s.NumStages()),
        num_micro_batches_(s.num_micro_batches),
        values_(static_cast<size_t>(3) * num_stages_ * num_micro_batches_, initial) {}

  T& operator[](const Action& a) {
    size_t kind = static_cast<size_t>(a.kind);
    return values_[(kind * num_stages_ + a.stage) * num_micro_batches_ + a.micro_batch];
  }

 private:
  int num_stages_;
  int num_micro_batches_;
  std::vector<T> values_;
};

// The actions `action` waits for (see the table above): at most two.
struct Prerequisites {
  int count = 0;
  std::array<Action, 2> actions;
};
Prerequisites PrerequisitesOf(const Schedule& schedule, const Action& action);

// The standard schedule of `kind`. InvalidArgument, with a hint, for impossible combinations:
// pp, v or m below 1; naive with m != 1; v != 1 for any kind but interleaved_1f1b;
// interleaved_1f1b with v < 2 or m not a multiple of pp. The result passes ValidateSchedule.
StatusOr<Schedule> GenerateSchedule(ScheduleKind kind, int pp, int virtual_stages,
                                    int num_micro_batches);

// Checks, in this order: the shape (pp, v, m >= 1; one list per position); each action
// (stage and micro-batch in range, W only when split, on the position that holds its stage,
// not a duplicate); completeness (one F, one B and, iff split, one W per stage and
// micro-batch); order (F before B before W of a stage and micro-batch); and that the
// dependencies cannot deadlock: a unit-time dry run, in which each position runs its next
// action once its prerequisites have finished, must finish. Errors name the position, the
// 0-based index in its list and the action:
//   "position 1, action 3 (1B0): waits for 2B0, which never runs (deadlock)"
Status ValidateSchedule(const Schedule& schedule);

// `steps` consecutive steps as one schedule of steps · m micro-batches (step k's micro-batch
// j becomes k·m + j). Flushing schedules: each position's lists concatenated; a consumer
// must keep the barrier between steps. PipeDream (no flush): each position's forwards of all
// steps and its backwards of all steps, in list order, re-interleaved by the 1F1B rule over
// the whole stream (pp - p - 1 warm-up forwards, then one forward per backward), so the
// pipeline never drains between steps. PipeDream REQUIRES v = 1 and no split backward
// (InvalidArgument otherwise). REQUIRES (checked by the caller): ValidateSchedule passed.
StatusOr<Schedule> UnrollSteps(const Schedule& schedule, int steps);

// Position `position`'s list of GenerateSchedule(kind, pp, virtual_stages, num_micro_batches)
// unrolled over `steps` (UnrollSteps), without generating the other positions' lists; the
// errors of those two calls. REQUIRES 0 <= position < pp.
StatusOr<std::vector<Action>> GeneratePositionSteps(ScheduleKind kind, int position, int pp,
                                                    int virtual_stages, int num_micro_batches,
                                                    int steps);

// The text form, headed by a '#' comment naming kind, pp, v, m and split.
std::string ScheduleToText(const Schedule& schedule);

// Parses the text form. The header values (kind, pp, v, m, split) come from the caller, not
// from comments. Syntax errors name `source`, the line and the token:
//   "x.sched:3: bad action '1X0': expected {stage}{F|B|W}{micro_batch}, e.g. 1F3"
// The result is validated; a ValidateSchedule error comes back prefixed with `source`.
StatusOr<Schedule> ParseScheduleText(std::string_view text, const std::string& source,
                                     ScheduleKind kind, int pp, int virtual_stages,
                                     int num_micro_batches, bool split_backward);

}  // namespace trident
