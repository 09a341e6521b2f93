#include "planner/simulator.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/replica_lanes.h"
#include "planner/lane_replay.h"
#include "planner/schedule_cache.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

bool BadTime(double ms) { return !std::isfinite(ms) || ms < 0; }

std::string Joined(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + Str(v);
  return text;
}

Status CheckStageTimes(const SimulationInput& in, bool split_backward) {
  for (size_t s = 0; s < in.stages.size(); ++s) {
    const StageTimes& t = in.stages[s];
    if (BadTime(t.fwd_ms) || BadTime(t.bwd_ms) || BadTime(t.weight_ms)) {
      return InvalidArgument("simulate: stage " + Str(s) +
                             ": times must be finite and >= 0 (fwd_ms " + std::to_string(t.fwd_ms) +
                             ", bwd_ms " + std::to_string(t.bwd_ms) + ", weight_ms " +
                             std::to_string(t.weight_ms) + ")");
    }
    if (t.weight_ms != 0 && !split_backward) {
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

// Everything but the times, which need to know whether the lanes split backward.
Status CheckInput(const SimulationInput& in) {
  if (in.schedule == nullptr) return InvalidArgument("simulate: no schedule given");
  if (in.steps < 1) return InvalidArgument("simulate: steps must be >= 1, got " + Str(in.steps));
  if (!in.replicas.empty() && static_cast<int>(in.replicas.size()) != in.schedule->pp) {
    return InvalidArgument("simulate: " + Str(in.replicas.size()) + " replica counts for " +
                           Str(in.schedule->pp) + " pipeline positions");
  }
  const Schedule& s = *in.schedule;
  if (Replicated(in) && (s.virtual_stages < 1 || s.num_micro_batches < 1)) {
    return InvalidArgument("simulate: virtual_stages and num_micro_batches must be >= 1, got " +
                           Str(s.virtual_stages) + ", " + Str(s.num_micro_batches));
  }
  if (Status status = Replicated(in) ? Status::Ok() : ValidateSchedule(s); !status.ok()) {
    return status.WithPrefix("simulate");
  }
  return Status::Ok();
}

Status CheckSizes(const SimulationInput& in) {
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
  return Status::Ok();
}

bool SplitsBackward(const SimulationInput& in, const std::vector<Lane>& lanes) {
  if (!Replicated(in)) return in.schedule->split_backward;
  for (const Lane& lane : lanes) {
    for (const Action& a : lane.actions) {
      if (a.kind == ActionKind::kWeight) return true;
    }
  }
  return false;
}

// The ids a replay of `steps` steps spans: stages and micro-batches of the schedule.
Schedule FrameOf(const SimulationInput& in, int steps, bool split_backward) {
  const Schedule& s = *in.schedule;
  return {s.kind, s.pp, s.virtual_stages, s.num_micro_batches * steps, split_backward, {}};
}

int PeakLive(bool split_backward, const std::vector<Action>& actions) {
  ActionKind last = split_backward ? ActionKind::kWeight : ActionKind::kBackward;
  int live = 0, peak = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::kForward) peak = std::max(peak, ++live);
    if (a.kind == last) --live;
  }
  return peak;
}

SimulationResult Summarize(bool split_backward, bool timeline, const std::vector<Lane>& lanes,
                           const LaneTimes& times) {
  SimulationResult result;
  size_t num_events = 0;
  for (const auto& lane : times) {
    if (!lane.empty()) result.makespan_ms = std::max(result.makespan_ms, lane.back().end_ms);
    num_events += lane.size();
  }
  // A search simulates plans of 10^5 actions and more, and reads no timeline.
  if (timeline) result.events.reserve(num_events);
  result.lanes.reserve(lanes.size());
  double idle_ms = 0;
  for (size_t i = 0; i < lanes.size(); ++i) {
    LaneStats stats{lanes[i].position, lanes[i].replica, lanes[i].micro_batches};
    for (size_t k = 0; k < times[i].size(); ++k) {
      const ActionInterval& t = times[i][k];
      stats.busy_ms += t.end_ms - t.start_ms;
      if (!timeline) continue;
      result.events.push_back({static_cast<int>(i), lanes[i].actions[k], t.start_ms, t.end_ms});
    }
    stats.idle_ms = result.makespan_ms - stats.busy_ms;
    stats.end_ms = times[i].empty() ? 0 : times[i].back().end_ms;
    stats.peak_live_activations = PeakLive(split_backward, lanes[i].actions);
    idle_ms += stats.idle_ms;
    result.lanes.push_back(stats);
  }
  if (result.makespan_ms > 0) {
    result.bubble_fraction = idle_ms / (static_cast<double>(lanes.size()) * result.makespan_ms);
  }
  result.steady_step_ms = result.makespan_ms;
  return result;
}

// Every position has the same r and r divides M: replica d's lanes form a pipeline of their
// own, of the same lists (up to micro-batch ids) and the same times as replica 0's, so only
// replica 0's lanes are replayed and their times copied.
bool IdenticalReplicas(const SimulationInput& in) {
  const std::vector<int>& r = in.replicas;
  return std::all_of(r.begin(), r.end(), [&](int x) { return x == r.front(); }) &&
         in.schedule->num_micro_batches % r.front() == 0;
}

StatusOr<LaneTimes> TimesOf(const SimulationInput& in, const Schedule& frame,
                            const std::vector<Lane>& lanes) {
  if (!Replicated(in) || !IdenticalReplicas(in)) return ReplayLanes(frame, in, lanes);
  std::vector<Lane> first;
  for (const Lane& lane : lanes) {
    if (lane.replica == 0) first.push_back(lane);
  }
  TRIDENT_ASSIGN_OR_RETURN(LaneTimes first_times, ReplayLanes(frame, in, first));
  LaneTimes times;
  times.reserve(lanes.size());
  for (const Lane& lane : lanes) times.push_back(first_times[lane.position]);
  return times;
}

// One replay of `steps` steps, back to back.
StatusOr<SimulationResult> Replay(const SimulationInput& in, int steps) {
  std::shared_ptr<const std::vector<Lane>> held;
  if (in.cache != nullptr) {
    TRIDENT_ASSIGN_OR_RETURN(held, in.cache->Lanes(in, steps, 0, in.schedule->pp - 1));
  } else {
    TRIDENT_ASSIGN_OR_RETURN(std::vector<Lane> made,
                             PipelineLanes(in, steps, 0, in.schedule->pp - 1));
    held = std::make_shared<const std::vector<Lane>>(std::move(made));
  }
  const std::vector<Lane>& lanes = *held;
  const bool split = SplitsBackward(in, lanes);
  TRIDENT_RETURN_IF_ERROR(CheckStageTimes(in, split));
  StatusOr<LaneTimes> times = TimesOf(in, FrameOf(in, steps, split), lanes);
  if (!times.ok()) {  // a deadlock, which a validated schedule's lists cannot have
    return InvalidArgument("simulate: " + in.schedule->ToString() + ", replicas " +
                           Joined(in.replicas) + ": " + times.status().message() +
                           "; hint: these replica counts cannot run this schedule round robin, "
                           "try others or another schedule");
  }
  return Summarize(split, in.timeline, lanes, *times);
}

// `steps` copies of a one-step result, each starting when the previous one has ended.
SimulationResult TileSteps(const SimulationResult& one, int steps, int num_micro_batches) {
  SimulationResult out = one;
  out.events.clear();
  out.events.reserve(one.events.size() * static_cast<size_t>(steps));
  for (int k = 0; k < steps; ++k) {
    for (TimelineEvent e : one.events) {
      e.action.micro_batch += k * num_micro_batches;
      e.start_ms += k * one.makespan_ms;
      e.end_ms += k * one.makespan_ms;
      out.events.push_back(e);
    }
  }
  out.makespan_ms = steps * one.makespan_ms;
  for (LaneStats& stats : out.lanes) {
    stats.busy_ms *= steps;
    stats.idle_ms = out.makespan_ms - stats.busy_ms;
    stats.end_ms += (steps - 1) * one.makespan_ms;
  }
  out.steady_step_ms = one.makespan_ms;  // bubble_fraction is unchanged by tiling
  return out;
}

}  // namespace

StatusOr<SimulationResult> Simulate(const SimulationInput& input) {
  TRIDENT_RETURN_IF_ERROR(CheckInput(input));
  TRIDENT_RETURN_IF_ERROR(CheckSizes(input));
  const Schedule& s = *input.schedule;
  if (input.steps == 1) return Replay(input, 1);
  if (s.Flushes()) {
    TRIDENT_ASSIGN_OR_RETURN(SimulationResult one, Replay(input, 1));
    return TileSteps(one, input.steps, s.num_micro_batches);
  }
  TRIDENT_ASSIGN_OR_RETURN(SimulationResult all, Replay(input, input.steps));
  TRIDENT_ASSIGN_OR_RETURN(SimulationResult fewer, Replay(input, input.steps - 1));
  all.steady_step_ms = all.makespan_ms - fewer.makespan_ms;
  return all;
}

std::string TimelineToChromeTrace(const SimulationResult& result) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t i = 0; i < result.lanes.size(); ++i) {
    const LaneStats& lane = result.lanes[i];
    std::string name = "position " + Str(lane.position) + " replica " + Str(lane.replica);
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", i}, {"args", {{"name", name}}}});
  }
  for (const TimelineEvent& e : result.events) {
    events.push_back(
        {{"name", ActionToString(e.action)},
         {"ph", "X"},
         {"ts", e.start_ms * 1000},
         {"dur", (e.end_ms - e.start_ms) * 1000},
         {"pid", 0},
         {"tid", e.lane},
         {"args", {{"stage", e.action.stage}, {"micro_batch", e.action.micro_batch}}}});
  }
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump(1);
}

}  // namespace trident
