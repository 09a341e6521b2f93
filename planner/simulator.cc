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

SimulationResult Summarize(const PreparedLanes& prepared, bool timeline, const LaneTimes& times) {
  const std::vector<Lane>& lanes = prepared.lanes;
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
    stats.peak_live_activations = prepared.peak_live[i];
    idle_ms += stats.idle_ms;
    result.lanes.push_back(stats);
  }
  if (result.makespan_ms > 0) {
    result.bubble_fraction = idle_ms / (static_cast<double>(lanes.size()) * result.makespan_ms);
  }
  result.steady_step_ms = result.makespan_ms;
  return result;
}

// One replay of `steps` steps, back to back.
StatusOr<SimulationResult> Replay(const SimulationInput& in, int steps) {
  std::shared_ptr<const PreparedLanes> prepared;
  if (in.cache != nullptr) {
    TRIDENT_ASSIGN_OR_RETURN(prepared, in.cache->Lanes(in, steps));
  } else {
    TRIDENT_ASSIGN_OR_RETURN(PreparedLanes made, PrepareLanes(in, steps));
    prepared = std::make_shared<const PreparedLanes>(std::move(made));
  }
  TRIDENT_RETURN_IF_ERROR(CheckSizes(in));
  TRIDENT_RETURN_IF_ERROR(CheckStageTimes(in, prepared->split_backward));
  return Summarize(*prepared, in.timeline, PreparedTimes(*prepared, in));
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
