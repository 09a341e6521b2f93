#include "planner/simulator.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

bool BadTime(double ms) { return !std::isfinite(ms) || ms < 0; }

Status CheckStageTimes(const SimulationInput& in) {
  for (size_t s = 0; s < in.stages.size(); ++s) {
    const StageTimes& t = in.stages[s];
    if (BadTime(t.fwd_ms) || BadTime(t.bwd_ms) || BadTime(t.weight_ms)) {
      return InvalidArgument("simulate: stage " + Str(s) +
                             ": times must be finite and >= 0 (fwd_ms " + std::to_string(t.fwd_ms) +
                             ", bwd_ms " + std::to_string(t.bwd_ms) + ", weight_ms " +
                             std::to_string(t.weight_ms) + ")");
    }
    if (t.weight_ms != 0 && !in.schedule->split_backward) {
      return InvalidArgument("simulate: stage " + Str(s) + " has weight_ms " +
                             std::to_string(t.weight_ms) + " but " + in.schedule->ToString() +
                             " does not split backward; hint: add it to bwd_ms");
    }
  }
  for (size_t b = 0; b < in.send_activation_ms.size(); ++b) {
    if (BadTime(in.send_activation_ms[b])) {
      return InvalidArgument("simulate: send_activation_ms[" + Str(b) +
                             "] must be finite and >= 0, got " +
                             std::to_string(in.send_activation_ms[b]));
    }
  }
  return Status::Ok();
}

Status CheckInput(const SimulationInput& in) {
  if (in.schedule == nullptr) return InvalidArgument("simulate: no schedule given");
  if (Status status = ValidateSchedule(*in.schedule); !status.ok()) {
    return status.WithPrefix("simulate");
  }
  size_t num_stages = in.schedule->NumStages();
  if (in.stages.size() != num_stages) {
    return InvalidArgument("simulate: " + Str(in.stages.size()) + " stage times for " +
                           Str(num_stages) + " stages");
  }
  if (in.send_activation_ms.size() != num_stages - 1) {
    return InvalidArgument("simulate: " + Str(in.send_activation_ms.size()) + " send times for " +
                           Str(num_stages - 1) +
                           " stage boundaries; hint: give one per stage but the last");
  }
  if (in.steps < 1) return InvalidArgument("simulate: steps must be >= 1, got " + Str(in.steps));
  return CheckStageTimes(in);
}

double DurationMs(const SimulationInput& in, const Action& a) {
  const StageTimes& t = in.stages[a.stage];
  switch (a.kind) {
    case ActionKind::kForward:
      return t.fwd_ms;
    case ActionKind::kBackward:
      return t.bwd_ms;
    case ActionKind::kWeight:
      return t.weight_ms;
  }
  return 0;
}

// When each action ended; negative until it has run.
using EndTimes = ActionMap<double>;

// When `a`'s inputs are all there, or a negative value if a prerequisite has not run.
double ReadyMs(const Schedule& s, const SimulationInput& in, const Action& a, EndTimes* ends) {
  double ready_ms = 0;
  Prerequisites pre = PrerequisitesOf(s, a);
  for (int d = 0; d < pre.count; ++d) {
    const Action& q = pre.actions[d];
    double end_ms = (*ends)[q];
    if (end_ms < 0) return -1;
    if (q.stage != a.stage) end_ms += in.send_activation_ms[std::min(q.stage, a.stage)];
    ready_ms = std::max(ready_ms, end_ms);
  }
  return ready_ms;
}

int PeakLive(const Schedule& s, const std::vector<Action>& actions) {
  ActionKind last = s.split_backward ? ActionKind::kWeight : ActionKind::kBackward;
  int live = 0, peak = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::kForward) peak = std::max(peak, ++live);
    if (a.kind == last) --live;
  }
  return peak;
}

// Per-position events of one replay, in list order.
using Timeline = std::vector<std::vector<TimelineEvent>>;

// Runs position p's next actions while their inputs are there; true if any ran.
bool Advance(const Schedule& s, const SimulationInput& in, int p, EndTimes* ends,
             Timeline* timeline) {
  std::vector<TimelineEvent>& done = (*timeline)[p];
  bool ran = false;
  while (done.size() < s.positions[p].size()) {
    const Action& a = s.positions[p][done.size()];
    double ready_ms = ReadyMs(s, in, a, ends);
    if (ready_ms < 0) break;
    double start_ms = std::max(ready_ms, done.empty() ? 0.0 : done.back().end_ms);
    double end_ms = start_ms + DurationMs(in, a);
    (*ends)[a] = end_ms;
    done.push_back({p, a, start_ms, end_ms});
    ran = true;
  }
  return ran;
}

SimulationResult Summarize(const Schedule& s, Timeline timeline) {
  SimulationResult result;
  for (const auto& events : timeline) {
    for (const TimelineEvent& e : events)
      result.makespan_ms = std::max(result.makespan_ms, e.end_ms);
  }
  double idle_ms = 0;
  for (int p = 0; p < s.pp; ++p) {
    PositionStats stats;
    for (const TimelineEvent& e : timeline[p]) stats.busy_ms += e.end_ms - e.start_ms;
    stats.idle_ms = result.makespan_ms - stats.busy_ms;
    stats.peak_live_activations = PeakLive(s, s.positions[p]);
    idle_ms += stats.idle_ms;
    result.positions.push_back(stats);
    result.events.insert(result.events.end(), timeline[p].begin(), timeline[p].end());
  }
  if (result.makespan_ms > 0) result.bubble_fraction = idle_ms / (s.pp * result.makespan_ms);
  result.steady_step_ms = result.makespan_ms;
  return result;
}

// One replay of `s` (already validated) with `in`'s times.
StatusOr<SimulationResult> Replay(const Schedule& s, const SimulationInput& in) {
  EndTimes ends(s, -1.0);
  Timeline timeline(s.pp);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int p = 0; p < s.pp; ++p) progress = Advance(s, in, p, &ends, &timeline) || progress;
  }
  for (int p = 0; p < s.pp; ++p) {
    if (timeline[p].size() != s.positions[p].size()) {
      return Internal("simulate: position " + Str(p) + " stalled at action " +
                      Str(timeline[p].size()) + " of a validated schedule");
    }
  }
  return Summarize(s, std::move(timeline));
}

// `steps` copies of a one-step result, each starting when the previous one has ended.
SimulationResult TileSteps(const SimulationResult& one, int steps, int num_micro_batches) {
  SimulationResult out = one;
  out.events.clear();
  for (int k = 0; k < steps; ++k) {
    for (TimelineEvent e : one.events) {
      e.action.micro_batch += k * num_micro_batches;
      e.start_ms += k * one.makespan_ms;
      e.end_ms += k * one.makespan_ms;
      out.events.push_back(e);
    }
  }
  out.makespan_ms = steps * one.makespan_ms;
  for (PositionStats& stats : out.positions) {
    stats.busy_ms *= steps;
    stats.idle_ms = out.makespan_ms - stats.busy_ms;
  }
  out.steady_step_ms = one.makespan_ms;  // bubble_fraction is unchanged by tiling
  return out;
}

StatusOr<SimulationResult> ReplayUnrolled(const SimulationInput& in, int steps) {
  TRIDENT_ASSIGN_OR_RETURN(Schedule unrolled, UnrollSteps(*in.schedule, steps));
  if (Status status = ValidateSchedule(unrolled); !status.ok()) {
    return status.WithPrefix("simulate: " + Str(steps) + " steps back to back");
  }
  return Replay(unrolled, in);
}

}  // namespace

StatusOr<SimulationResult> Simulate(const SimulationInput& input) {
  TRIDENT_RETURN_IF_ERROR(CheckInput(input));
  const Schedule& s = *input.schedule;
  if (input.steps == 1) return Replay(s, input);
  if (s.Flushes()) {
    TRIDENT_ASSIGN_OR_RETURN(SimulationResult one, Replay(s, input));
    return TileSteps(one, input.steps, s.num_micro_batches);
  }
  TRIDENT_ASSIGN_OR_RETURN(SimulationResult all, ReplayUnrolled(input, input.steps));
  TRIDENT_ASSIGN_OR_RETURN(SimulationResult fewer, ReplayUnrolled(input, input.steps - 1));
  all.steady_step_ms = all.makespan_ms - fewer.makespan_ms;
  return all;
}

std::string TimelineToChromeTrace(const SimulationResult& result) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t p = 0; p < result.positions.size(); ++p) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", p},
                      {"args", {{"name", "position " + Str(p)}}}});
  }
  for (const TimelineEvent& e : result.events) {
    events.push_back(
        {{"name", ActionToString(e.action)},
         {"ph", "X"},
         {"ts", e.start_ms * 1000},
         {"dur", (e.end_ms - e.start_ms) * 1000},
         {"pid", 0},
         {"tid", e.position},
         {"args", {{"stage", e.action.stage}, {"micro_batch", e.action.micro_batch}}}});
  }
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump(1);
}

}  // namespace trident
