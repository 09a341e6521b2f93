#include "planner/lane_replay.h"

#include <algorithm>
#include <string>

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

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

// The actions that wait for `a` (the inverse of PrerequisitesOf): at most two. A W is listed
// whether or not the schedule splits backward; an action no lane runs wakes nobody.
Prerequisites DependentsOf(const Schedule& frame, const Action& a) {
  Prerequisites out;
  const int s = a.stage, j = a.micro_batch;
  if (a.kind == ActionKind::kForward) {
    if (s + 1 < frame.NumStages()) out.actions[out.count++] = {ActionKind::kForward, s + 1, j};
    out.actions[out.count++] = {ActionKind::kBackward, s, j};
  } else if (a.kind == ActionKind::kBackward) {
    if (s > 0) out.actions[out.count++] = {ActionKind::kBackward, s - 1, j};
    out.actions[out.count++] = {ActionKind::kWeight, s, j};
  }
  return out;
}

// The structural replay LaneReplay::Create runs: which lane runs each action, where in the
// order each action ran (-1 until it has), and the lanes to try next.
struct Ordering {
  Ordering(const Schedule& f, const std::vector<Lane>& l)
      : frame(f), lanes(l), owner(f, -1), place(f, -1), next(l.size(), 0) {}

  const Schedule& frame;
  const std::vector<Lane>& lanes;
  ActionMap<int> owner;      // the lane that runs each action; -1 for none
  ActionMap<int> place;      // where each action ran in the order; -1 until it has
  std::vector<size_t> next;  // per lane, its next action
  std::vector<int> woken;    // lanes to try next
};

// Runs lane i's next actions while their inputs have run, appending each to `steps` with the
// places of its inputs, and wakes the lanes that wait on them.
template <typename Step>
void Advance(Ordering* o, int i, std::vector<Step>* steps) {
  const std::vector<Action>& actions = o->lanes[i].actions;
  while (o->next[i] < actions.size()) {
    const Action& a = actions[o->next[i]];
    Step step;
    step.lane = i;
    step.action = a;
    Prerequisites pre = PrerequisitesOf(o->frame, a);
    for (int d = 0; d < pre.count; ++d) {
      const Action& q = pre.actions[d];
      const int at = o->place[q];
      if (at < 0) return;
      step.inputs[d] = at;
      step.boundary[d] = q.stage != a.stage ? std::min(q.stage, a.stage) : -1;
    }
    o->place[a] = static_cast<int>(steps->size());
    steps->push_back(step);
    ++o->next[i];
    Prerequisites waiting = DependentsOf(o->frame, a);
    for (int d = 0; d < waiting.count; ++d) {
      int lane = o->owner[waiting.actions[d]];
      if (lane >= 0 && lane != i) o->woken.push_back(lane);
    }
  }
}

std::string LaneName(const Lane& lane) {
  return "position " + Str(lane.position) + " replica " + Str(lane.replica);
}

std::string Where(const Lane& lane, const Action& a) {
  auto it = std::find(lane.actions.begin(), lane.actions.end(), a);
  return LaneName(lane) + ", action " + Str(it - lane.actions.begin());
}

// The first stuck lane, its next action and the input it waits for.
Status Deadlock(Ordering* o) {
  for (size_t i = 0; i < o->lanes.size(); ++i) {
    const Lane& lane = o->lanes[i];
    size_t index = o->next[i];
    if (index == lane.actions.size()) continue;
    const Action& a = lane.actions[index];
    Prerequisites pre = PrerequisitesOf(o->frame, a);
    for (int d = 0; d < pre.count; ++d) {
      const Action& q = pre.actions[d];
      if (o->place[q] >= 0) continue;
      int owner = o->owner[q];
      return InvalidArgument(
          Where(lane, a) + " (" + ActionToString(a) + ") waits for " + ActionToString(q) +
          (owner < 0 ? ", which no lane runs" : " (" + Where(o->lanes[owner], q) + ")") +
          ", which never runs (deadlock)");
    }
  }
  return Status::Ok();
}

// The schedule's own lists of positions [first, last] as lanes, `steps` of them back to back
// (no flush).
StatusOr<std::vector<Lane>> ListLanes(const Schedule& s, int steps, int first, int last) {
  Schedule unrolled = s;
  if (steps > 1) {
    TRIDENT_ASSIGN_OR_RETURN(unrolled, UnrollSteps(s, steps));
    if (Status status = ValidateSchedule(unrolled); !status.ok()) {
      return status.WithPrefix("simulate: " + Str(steps) + " steps back to back");
    }
  }
  std::vector<Lane> lanes;
  for (int p = first; p <= last; ++p) {
    lanes.push_back({p, 0, s.num_micro_batches, std::move(unrolled.positions[p])});
  }
  return lanes;
}

std::string Joined(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + Str(v);
  return text;
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

// Every position has the same r and r divides M: replica d's lanes form a pipeline of their
// own, of the same lists (up to micro-batch ids) and the same times as replica 0's, so only
// replica 0's lanes are replayed and their times copied.
bool IdenticalReplicas(const SimulationInput& in) {
  const std::vector<int>& r = in.replicas;
  return Replicated(in) && std::all_of(r.begin(), r.end(), [&](int x) { return x == r.front(); }) &&
         in.schedule->num_micro_batches % r.front() == 0;
}

}  // namespace

bool Replicated(const SimulationInput& in) {
  return std::any_of(in.replicas.begin(), in.replicas.end(), [](int r) { return r != 1; });
}

StatusOr<std::vector<Lane>> PipelineLanes(const SimulationInput& in, int steps, int first,
                                          int last) {
  const Schedule& s = *in.schedule;
  if (!Replicated(in)) return ListLanes(s, steps, first, last);
  StatusOr<std::vector<Lane>> lanes = ReplicaLanesBetween(
      s.kind, s.pp, s.virtual_stages, s.num_micro_batches, in.replicas, steps, first, last);
  if (!lanes.ok()) return lanes.status().WithPrefix("simulate");
  return lanes;
}

StatusOr<LaneReplay> LaneReplay::Create(const Schedule& frame, const std::vector<Lane>& lanes) {
  Ordering o(frame, lanes);
  LaneReplay replay;
  size_t total = 0;
  for (size_t i = 0; i < lanes.size(); ++i) {
    for (const Action& a : lanes[i].actions) o.owner[a] = static_cast<int>(i);
    replay.lane_sizes_.push_back(lanes[i].actions.size());
    total += lanes[i].actions.size();
  }
  replay.steps_.reserve(total);
  for (size_t i = lanes.size(); i-- > 0;) o.woken.push_back(static_cast<int>(i));
  while (!o.woken.empty()) {
    int lane = o.woken.back();
    o.woken.pop_back();
    Advance(&o, lane, &replay.steps_);
  }
  TRIDENT_RETURN_IF_ERROR(Deadlock(&o));
  return replay;
}

// Each action starts once its lane is free and its inputs have ended and crossed their sends:
// the arithmetic of an event-driven replay, in its order.
LaneTimes LaneReplay::Times(const SimulationInput& in) const {
  LaneTimes times(lane_sizes_.size());
  for (size_t i = 0; i < lane_sizes_.size(); ++i) times[i].reserve(lane_sizes_[i]);
  std::vector<double> ends(steps_.size());
  std::vector<double> free_ms(lane_sizes_.size(), 0.0);
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& step = steps_[k];
    double ready_ms = 0;
    for (int d = 0; d < 2 && step.inputs[d] >= 0; ++d) {
      double end_ms = ends[static_cast<size_t>(step.inputs[d])];
      if (step.boundary[d] >= 0) end_ms += in.send_activation_ms[step.boundary[d]];
      ready_ms = std::max(ready_ms, end_ms);
    }
    const double start_ms = std::max(ready_ms, free_ms[step.lane]);
    ends[k] = free_ms[step.lane] = start_ms + DurationMs(in, step.action);
    times[step.lane].push_back({start_ms, ends[k]});
  }
  return times;
}

StatusOr<LaneTimes> ReplayLanes(const Schedule& frame, const SimulationInput& input,
                                const std::vector<Lane>& lanes) {
  TRIDENT_ASSIGN_OR_RETURN(LaneReplay replay, LaneReplay::Create(frame, lanes));
  return replay.Times(input);
}

StatusOr<PreparedLanes> PrepareLanes(const SimulationInput& in, int steps) {
  if (!Replicated(in)) {
    if (Status valid = ValidateSchedule(*in.schedule); !valid.ok()) {
      return valid.WithPrefix("simulate");
    }
  }
  PreparedLanes p;
  TRIDENT_ASSIGN_OR_RETURN(p.lanes, PipelineLanes(in, steps, 0, in.schedule->pp - 1));
  p.split_backward = SplitsBackward(in, p.lanes);
  for (const Lane& lane : p.lanes) p.peak_live.push_back(PeakLive(p.split_backward, lane.actions));
  p.copies_replica_zero = IdenticalReplicas(in);
  std::vector<Lane> replayed;
  for (const Lane& lane : p.lanes) {
    if (!p.copies_replica_zero || lane.replica == 0) replayed.push_back(lane);
  }
  StatusOr<LaneReplay> replay = LaneReplay::Create(FrameOf(in, steps, p.split_backward), replayed);
  if (!replay.ok()) {  // a deadlock, which a validated schedule's lists cannot have
    return InvalidArgument("simulate: " + in.schedule->ToString() + ", replicas " +
                           Joined(in.replicas) + ": " + replay.status().message() +
                           "; hint: these replica counts cannot run this schedule round robin, "
                           "try others or another schedule");
  }
  p.replay = std::move(*replay);
  return p;
}

LaneTimes PreparedTimes(const PreparedLanes& p, const SimulationInput& in) {
  LaneTimes replayed = p.replay.Times(in);
  if (!p.copies_replica_zero) return replayed;
  LaneTimes times;
  times.reserve(p.lanes.size());
  for (const Lane& lane : p.lanes) times.push_back(replayed[lane.position]);
  return times;
}

}  // namespace trident
