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

struct Replay {
  Replay(const Schedule& f, const SimulationInput& i, const std::vector<Lane>& l)
      : frame(f), in(i), lanes(l), owner(f, -1), ends(f, -1.0), times(l.size()) {}

  const Schedule& frame;
  const SimulationInput& in;
  const std::vector<Lane>& lanes;
  ActionMap<int> owner;    // the lane that runs each action; -1 for none
  ActionMap<double> ends;  // when each action ended; negative until it has run
  LaneTimes times;
  std::vector<int> woken;  // lanes to try next
};

// When `a`'s inputs are all there, or a negative value if one has not run.
double ReadyMs(Replay* r, const Action& a) {
  double ready_ms = 0;
  Prerequisites pre = PrerequisitesOf(r->frame, a);
  for (int d = 0; d < pre.count; ++d) {
    const Action& q = pre.actions[d];
    double end_ms = r->ends[q];
    if (end_ms < 0) return -1;
    if (q.stage != a.stage) end_ms += r->in.send_activation_ms[std::min(q.stage, a.stage)];
    ready_ms = std::max(ready_ms, end_ms);
  }
  return ready_ms;
}

// Runs lane i's next actions while their inputs are there, waking the lanes that wait on them.
void Advance(Replay* r, int i) {
  const std::vector<Action>& actions = r->lanes[i].actions;
  std::vector<ActionInterval>& done = r->times[i];
  while (done.size() < actions.size()) {
    const Action& a = actions[done.size()];
    double ready_ms = ReadyMs(r, a);
    if (ready_ms < 0) return;
    double start_ms = std::max(ready_ms, done.empty() ? 0.0 : done.back().end_ms);
    done.push_back({start_ms, start_ms + DurationMs(r->in, a)});
    r->ends[a] = done.back().end_ms;
    Prerequisites next = DependentsOf(r->frame, a);
    for (int d = 0; d < next.count; ++d) {
      int lane = r->owner[next.actions[d]];
      if (lane >= 0 && lane != i) r->woken.push_back(lane);
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
Status Deadlock(Replay* r) {
  for (size_t i = 0; i < r->lanes.size(); ++i) {
    const Lane& lane = r->lanes[i];
    size_t index = r->times[i].size();
    if (index == lane.actions.size()) continue;
    const Action& a = lane.actions[index];
    Prerequisites pre = PrerequisitesOf(r->frame, a);
    for (int d = 0; d < pre.count; ++d) {
      const Action& q = pre.actions[d];
      if (r->ends[q] >= 0) continue;
      int o = r->owner[q];
      return InvalidArgument(Where(lane, a) + " (" + ActionToString(a) + ") waits for " +
                             ActionToString(q) +
                             (o < 0 ? ", which no lane runs" : " (" + Where(r->lanes[o], q) + ")") +
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

StatusOr<LaneTimes> ReplayLanes(const Schedule& frame, const SimulationInput& input,
                                const std::vector<Lane>& lanes) {
  Replay r(frame, input, lanes);
  for (size_t i = 0; i < lanes.size(); ++i) {
    for (const Action& a : lanes[i].actions) r.owner[a] = static_cast<int>(i);
    r.times[i].reserve(lanes[i].actions.size());
  }
  for (size_t i = lanes.size(); i-- > 0;) r.woken.push_back(static_cast<int>(i));
  while (!r.woken.empty()) {
    int lane = r.woken.back();
    r.woken.pop_back();
    Advance(&r, lane);
  }
  TRIDENT_RETURN_IF_ERROR(Deadlock(&r));
  return std::move(r.times);
}

}  // namespace trident
