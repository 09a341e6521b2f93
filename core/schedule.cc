// Schedule generators, the validator and step unrolling. The text form lives in
// schedule_text.cc.
#include "core/schedule.h"

#include <algorithm>

#include "core/check.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

Action Fwd(int stage, int micro_batch) { return {ActionKind::kForward, stage, micro_batch}; }
Action Bwd(int stage, int micro_batch) { return {ActionKind::kBackward, stage, micro_batch}; }
Action Wgt(int stage, int micro_batch) { return {ActionKind::kWeight, stage, micro_batch}; }

// The 1F1B interleaving of a position's forward and backward streams: `warmup` forwards, then
// one forward followed by one backward while forwards remain, then the remaining backwards.
// REQUIRES: fwd.size() == bwd.size().
std::vector<Action> OneFOneB(const std::vector<Action>& fwd, const std::vector<Action>& bwd,
                             int warmup) {
  TRIDENT_CHECK_EQ(fwd.size(), bwd.size());
  int n = static_cast<int>(fwd.size());
  int w = std::min(warmup, n);
  std::vector<Action> out(fwd.begin(), fwd.begin() + w);
  for (int i = 0; i < n - w; ++i) {
    out.push_back(fwd[w + i]);
    out.push_back(bwd[i]);
  }
  out.insert(out.end(), bwd.begin() + (n - w), bwd.end());
  return out;
}

// Naive model parallelism (m = 1): the micro-batch runs forward through every stage, then
// backward; one position works at a time. Idle fraction (p-1)/p.
std::vector<Action> NaivePosition(int position) { return {Fwd(position, 0), Bwd(position, 0)}; }

// GPipe (Huang et al., NeurIPS 2019): every forward, then every backward, both in micro-batch
// order 0..m-1 (first in, first out, as in torch.distributed.pipelining's ScheduleGPipe).
// With equal stages and no communication the last stage's forwards end at (m+p-1)·F and the
// backward chain then lets stage s finish at (m+p-1)·F + (p-1-s)·B + m·B, so stage 0 ends at
// (m+p-1)(F+B) having been busy m(F+B): idle fraction (p-1)/(m+p-1). Worked example:
// p = 4, m = 8, F = 1, B = 2: makespan 33 ms, busy 24 ms, idle fraction 9/33 = 3/11.
std::vector<Action> GpipePosition(int position, int m) {
  std::vector<Action> out;
  for (int j = 0; j < m; ++j) out.push_back(Fwd(position, j));
  for (int j = 0; j < m; ++j) out.push_back(Bwd(position, j));
  return out;
}

// 1F1B with flush (PipeDream-Flush, Narayanan et al., SC 2021; Megatron-LM's
// forward_backward_pipelining_without_interleaving): position p runs min(pp-p-1, m)
// warm-up forwards, then alternates one forward and one backward, then drains the remaining
// backwards. Same makespan as GPipe, (m+p-1)(F+B), but position 0 holds at most min(p, m)
// micro-batches instead of m. PipeDream (Narayanan et al., SOSP 2019) uses this order within a
// step and no flush between steps (UnrollSteps).
std::vector<Action> OneFOneBPosition(int position, int pp, int m) {
  std::vector<Action> fwd, bwd;
  for (int j = 0; j < m; ++j) {
    fwd.push_back(Fwd(position, j));
    bwd.push_back(Bwd(position, j));
  }
  return OneFOneB(fwd, bwd, pp - position - 1);
}

// Interleaved 1F1B (Narayanan et al., SC 2021; Megatron-LM's
// forward_backward_pipelining_with_interleaving). Each position runs v chunks and m·v
// "virtual" micro-batches. Virtual forward k is micro-batch g·pp + (r mod pp) of chunk r / pp,
// where g = k / (pp·v) and r = k mod (pp·v): groups of pp micro-batches go through chunk 0,
// then chunk 1, and so on. Virtual backward k is the same but walks the chunks from v-1 down
// to 0. Warm-up: min(2(pp-p-1) + (v-1)·pp, m·v) forwards, then 1F1B over the virtual streams.
// With per-chunk times F/v and B/v the makespan is (m + (p-1)/v)(F+B): idle fraction
// (p-1)/(v·m+p-1). Position 0 holds up to min(v·pp + pp - 1, m·v) chunk activations, i.e.
// pp·(1 + (pp-1)/(pp·v)) whole stages (Megatron's count). Worked example: p = 4, v = 2,
// m = 8: warm-up on position 0 is 10 virtual forwards, peak 11 chunks = 5.5 stages, idle
// fraction 3/19.
std::vector<Action> InterleavedPosition(int position, int pp, int v, int m) {
  std::vector<Action> fwd, bwd;
  for (int k = 0; k < m * v; ++k) {
    int group = k / (pp * v), r = k % (pp * v);
    int micro_batch = group * pp + r % pp;
    int chunk = r / pp;
    fwd.push_back(Fwd(chunk * pp + position, micro_batch));
    bwd.push_back(Bwd((v - 1 - chunk) * pp + position, micro_batch));
  }
  return OneFOneB(fwd, bwd, std::min(2 * (pp - position - 1) + (v - 1) * pp, m * v));
}

// ZB-H1 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism", Figure 3): backward split
// into B (input gradient) and W (weight gradient). For x = 0 .. m+pp-2 position p runs the
// triple F(x), B(x - (pp-1-p)), W(x - (pp-1)), skipping ids outside [0, m): B keeps 1F1B's
// timing, W is deferred by p stage-steps to fill the bubbles of the drain, and no position
// holds more than pp micro-batches between F and W, 1F1B's peak. For m >= pp and
// W <= min(F, B) each position idles (p-1)(F+B-W): idle fraction
// (p-1)(F+B-W) / (m(F+B+W) + (p-1)(F+B-W)); worked example p = 4, m = 8, F = B = W = 1:
// makespan 27, idle fraction 3/27 = 1/9. For m < pp (F = B = W = 1) the drain alternates B and
// W on position 0: makespan 2p + 2m - 1, idle fraction (2p-m-1)/(2p+2m-1), e.g. p = 4, m = 2:
// 5/11.
std::vector<Action> ZbH1Position(int position, int pp, int m) {
  std::vector<Action> out;
  auto in_range = [m](int j) { return j >= 0 && j < m; };
  for (int x = 0; x < m + pp - 1; ++x) {
    if (in_range(x)) out.push_back(Fwd(position, x));
    if (int b = x - (pp - 1 - position); in_range(b)) out.push_back(Bwd(position, b));
    if (int w = x - (pp - 1); in_range(w)) out.push_back(Wgt(position, w));
  }
  return out;
}

Status CheckGeneratorArgs(ScheduleKind kind, int pp, int v, int m) {
  const std::string& name = NameOf(ScheduleKindNames(), kind);
  if (pp < 1 || v < 1 || m < 1) {
    return InvalidArgument(name + ": pp, virtual_stages and num_micro_batches must be >= 1, got " +
                           Str(pp) + ", " + Str(v) + ", " + Str(m));
  }
  if (kind == ScheduleKind::kInterleaved1F1B) {
    if (v < 2) {
      return InvalidArgument(
          "interleaved_1f1b needs virtual_stages >= 2, got " + Str(v) +
          "; hint: set virtual_stages to 2 or more, or use 1f1b for one stage per position");
    }
    if (m % pp != 0) {
      return InvalidArgument(
          "interleaved_1f1b runs micro-batches in groups of pp, so "
          "num_micro_batches must be a multiple of pp " +
          Str(pp) + ", got " + Str(m) + "; hint: use " + Str((m / pp + 1) * pp) + " micro-batches");
    }
    return Status::Ok();
  }
  if (v != 1) {
    return InvalidArgument(name +
                           " runs one stage per position, so virtual_stages must be 1, got " +
                           Str(v) + "; hint: use interleaved_1f1b for virtual stages");
  }
  if (kind == ScheduleKind::kNaive && m != 1) {
    return InvalidArgument("naive model parallelism runs one micro-batch, got " + Str(m) +
                           "; hint: use gpipe or 1f1b to pipeline several micro-batches");
  }
  return Status::Ok();
}

std::vector<Action> GeneratePosition(ScheduleKind kind, int position, int pp, int v, int m) {
  switch (kind) {
    case ScheduleKind::kNaive:
      return NaivePosition(position);
    case ScheduleKind::kGpipe:
      return GpipePosition(position, m);
    case ScheduleKind::k1F1B:
    case ScheduleKind::kPipeDream:
      return OneFOneBPosition(position, pp, m);
    case ScheduleKind::kInterleaved1F1B:
      return InterleavedPosition(position, pp, v, m);
    case ScheduleKind::kZbH1:
      return ZbH1Position(position, pp, m);
  }
  TRIDENT_CHECK(false) << "unknown schedule kind " << static_cast<int>(kind);
  return {};
}

}  // namespace

std::string Schedule::ToString() const {
  return NameOf(ScheduleKindNames(), kind) + ": pp " + Str(pp) + ", virtual_stages " +
         Str(virtual_stages) + ", " + Str(num_micro_batches) + " micro-batches" +
         (split_backward ? ", split backward" : "");
}

Prerequisites PrerequisitesOf(const Schedule& schedule, const Action& action) {
  Prerequisites out;
  int s = action.stage, j = action.micro_batch;
  switch (action.kind) {
    case ActionKind::kForward:
      if (s > 0) out.actions[out.count++] = Fwd(s - 1, j);
      break;
    case ActionKind::kBackward:
      out.actions[out.count++] = Fwd(s, j);
      if (s + 1 < schedule.NumStages()) out.actions[out.count++] = Bwd(s + 1, j);
      break;
    case ActionKind::kWeight:
      out.actions[out.count++] = Bwd(s, j);
      break;
  }
  return out;
}

StatusOr<Schedule> GenerateSchedule(ScheduleKind kind, int pp, int virtual_stages,
                                    int num_micro_batches) {
  TRIDENT_RETURN_IF_ERROR(CheckGeneratorArgs(kind, pp, virtual_stages, num_micro_batches));
  Schedule schedule{kind, pp, virtual_stages, num_micro_batches, kind == ScheduleKind::kZbH1, {}};
  for (int p = 0; p < pp; ++p) {
    schedule.positions.push_back(GeneratePosition(kind, p, pp, virtual_stages, num_micro_batches));
  }
  return schedule;
}

namespace {

std::vector<Action> Shifted(const std::vector<Action>& actions, int offset) {
  std::vector<Action> out = actions;
  for (Action& a : out) a.micro_batch += offset;
  return out;
}

std::vector<Action> ConcatenatedSteps(const std::vector<Action>& step, int m, int steps) {
  std::vector<Action> out;
  for (int k = 0; k < steps; ++k) {
    std::vector<Action> shifted = Shifted(step, k * m);
    out.insert(out.end(), shifted.begin(), shifted.end());
  }
  return out;
}

std::vector<Action> StreamedSteps(const std::vector<Action>& step, int warmup, int m, int steps) {
  std::vector<Action> fwd, bwd;
  for (int k = 0; k < steps; ++k) {
    for (const Action& a : Shifted(step, k * m)) {
      (a.kind == ActionKind::kForward ? fwd : bwd).push_back(a);
    }
  }
  return OneFOneB(fwd, bwd, warmup);
}

Status CheckUnroll(const Schedule& schedule, int steps) {
  if (steps < 1) return InvalidArgument("steps must be >= 1, got " + Str(steps));
  if (!schedule.Flushes() && (schedule.virtual_stages != 1 || schedule.split_backward)) {
    return InvalidArgument(schedule.ToString() +
                           ": a schedule without flush unrolls only with virtual_stages 1 and "
                           "no split backward");
  }
  return Status::Ok();
}

// Position p's list `step` over `steps` steps.
std::vector<Action> StepsOf(const Schedule& schedule, int p, const std::vector<Action>& step,
                            int steps) {
  const int m = schedule.num_micro_batches;
  return schedule.Flushes() ? ConcatenatedSteps(step, m, steps)
                            : StreamedSteps(step, schedule.pp - p - 1, m, steps);
}

}  // namespace

StatusOr<Schedule> UnrollSteps(const Schedule& schedule, int steps) {
  TRIDENT_RETURN_IF_ERROR(CheckUnroll(schedule, steps));
  Schedule out = schedule;
  out.num_micro_batches = schedule.num_micro_batches * steps;
  for (int p = 0; p < schedule.pp; ++p) {
    out.positions[p] = StepsOf(schedule, p, schedule.positions[p], steps);
  }
  return out;
}

StatusOr<std::vector<Action>> GeneratePositionSteps(ScheduleKind kind, int position, int pp,
                                                    int virtual_stages, int num_micro_batches,
                                                    int steps) {
  TRIDENT_RETURN_IF_ERROR(CheckGeneratorArgs(kind, pp, virtual_stages, num_micro_batches));
  const Schedule frame{kind, pp, virtual_stages, num_micro_batches, kind == ScheduleKind::kZbH1,
                       {}};
  TRIDENT_RETURN_IF_ERROR(CheckUnroll(frame, steps));
  return StepsOf(frame, position,
                 GeneratePosition(kind, position, pp, virtual_stages, num_micro_batches), steps);
}

// ---------------------------------------------------------------------------------------------
// Validation.

namespace {

std::string At(int position, int index, const Action& action) {
  return "position " + Str(position) + ", action " + Str(index) + " (" + ActionToString(action) +
         ")";
}

// Where each (kind, stage, micro-batch) sits in the schedule, and whether it has run in the
// dry run.
struct ActionEntry {
  int position = -1;  // -1: not in the schedule
  int index = -1;
  bool done = false;
};
using ActionTable = ActionMap<ActionEntry>;

Status CheckShape(const Schedule& s) {
  if (s.pp < 1 || s.virtual_stages < 1 || s.num_micro_batches < 1) {
    return InvalidArgument("schedule: pp, virtual_stages and num_micro_batches must be >= 1, got " +
                           Str(s.pp) + ", " + Str(s.virtual_stages) + ", " +
                           Str(s.num_micro_batches));
  }
  if (static_cast<int>(s.positions.size()) != s.pp) {
    return InvalidArgument("schedule has " + Str(s.positions.size()) +
                           " position lists but pp is " + Str(s.pp) +
                           "; hint: give one list (one text line) per pipeline position");
  }
  return Status::Ok();
}

Status CheckAction(const Schedule& s, int position, int index, const Action& a) {
  auto where = [&] { return At(position, index, a); };  // only for an error: validation is hot
  if (a.stage < 0 || a.stage >= s.NumStages()) {
    return InvalidArgument(where() + ": stage out of range [0, " + Str(s.NumStages()) + ")");
  }
  if (a.micro_batch < 0 || a.micro_batch >= s.num_micro_batches) {
    return InvalidArgument(where() + ": micro-batch out of range [0, " + Str(s.num_micro_batches) +
                           ")");
  }
  if (a.kind == ActionKind::kWeight && !s.split_backward) {
    return InvalidArgument(where() + ": W appears but this schedule does not split backward");
  }
  if (s.PositionOf(a.stage) != position) {
    return InvalidArgument(where() + ": stage " + Str(a.stage) + " runs on position " +
                           Str(s.PositionOf(a.stage)) + ", not " + Str(position));
  }
  return Status::Ok();
}

Status IndexActions(const Schedule& s, ActionTable* table) {
  for (int p = 0; p < s.pp; ++p) {
    for (int i = 0; i < static_cast<int>(s.positions[p].size()); ++i) {
      const Action& a = s.positions[p][i];
      TRIDENT_RETURN_IF_ERROR(CheckAction(s, p, i, a));
      ActionEntry& entry = (*table)[a];
      if (entry.position >= 0) {
        return InvalidArgument(At(p, i, a) + ": duplicate of action " + Str(entry.index));
      }
      entry = {p, i, false};
    }
  }
  return Status::Ok();
}

// The kinds every (stage, micro-batch) must have, in the order they must run.
std::vector<ActionKind> RequiredKinds(const Schedule& s) {
  if (s.split_backward) return {ActionKind::kForward, ActionKind::kBackward, ActionKind::kWeight};
  return {ActionKind::kForward, ActionKind::kBackward};
}

// Every required action is present, and F comes before B before W in its position's list.
Status CheckCompleteAndOrdered(const Schedule& s, ActionTable* table) {
  std::vector<ActionKind> kinds = RequiredKinds(s);
  for (int stage = 0; stage < s.NumStages(); ++stage) {
    for (int j = 0; j < s.num_micro_batches; ++j) {
      for (size_t k = 0; k < kinds.size(); ++k) {
        Action a{kinds[k], stage, j};
        const ActionEntry& entry = (*table)[a];
        if (entry.position < 0) {
          return InvalidArgument("position " + Str(s.PositionOf(stage)) + ": " + ActionToString(a) +
                                 " is missing");
        }
        if (k == 0) continue;
        Action before{kinds[k - 1], stage, j};
        const ActionEntry& prior = (*table)[before];
        if (prior.index > entry.index) {
          return InvalidArgument(At(entry.position, entry.index, a) + ": runs before " +
                                 ActionToString(before) + " (action " + Str(prior.index) +
                                 "); a stage runs F, then B, then W of a micro-batch");
        }
      }
    }
  }
  return Status::Ok();
}

// The first prerequisite of `a` that has not run, if any.
const Action* FirstPending(const Prerequisites& pre, ActionTable* table) {
  for (int d = 0; d < pre.count; ++d) {
    if (!(*table)[pre.actions[d]].done) return &pre.actions[d];
  }
  return nullptr;
}

Status Deadlock(const Schedule& s, const std::vector<size_t>& next, ActionTable* table) {
  for (int p = 0; p < s.pp; ++p) {
    if (next[p] == s.positions[p].size()) continue;
    const Action& a = s.positions[p][next[p]];
    Prerequisites pre = PrerequisitesOf(s, a);
    const Action* pending = FirstPending(pre, table);
    TRIDENT_CHECK(pending != nullptr) << "a stuck action has no pending prerequisite";
    return InvalidArgument(At(p, static_cast<int>(next[p]), a) + ": waits for " +
                           ActionToString(*pending) + ", which never runs (deadlock)");
  }
  return Internal("dry run: no position is stuck");
}

// Unit-time dry run: in each round every position whose next action's prerequisites finished
// in an earlier round runs it. No progress in a round with work left means deadlock.
Status DryRun(const Schedule& s, ActionTable* table) {
  std::vector<size_t> next(s.pp, 0);
  size_t remaining = 0;
  for (const auto& list : s.positions) remaining += list.size();
  std::vector<Action> ran;
  while (remaining > 0) {
    ran.clear();
    for (int p = 0; p < s.pp; ++p) {
      if (next[p] == s.positions[p].size()) continue;
      const Action& a = s.positions[p][next[p]];
      if (FirstPending(PrerequisitesOf(s, a), table) == nullptr) ran.push_back(a);
    }
    if (ran.empty()) return Deadlock(s, next, table);
    for (const Action& a : ran) {
      (*table)[a].done = true;
      ++next[s.PositionOf(a.stage)];
    }
    remaining -= ran.size();
  }
  return Status::Ok();
}

}  // namespace

Status ValidateSchedule(const Schedule& schedule) {
  TRIDENT_RETURN_IF_ERROR(CheckShape(schedule));
  ActionTable table(schedule, ActionEntry{});
  TRIDENT_RETURN_IF_ERROR(IndexActions(schedule, &table));
  TRIDENT_RETURN_IF_ERROR(CheckCompleteAndOrdered(schedule, &table));
  return DryRun(schedule, &table);
}

}  // namespace trident
