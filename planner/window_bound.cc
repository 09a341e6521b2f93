#include "planner/window_bound.h"

#include <algorithm>

#include "planner/lane_replay.h"

namespace trident {
namespace {

// Frame stages 0..width − 1 are the window's positions, stage `width` the positions after it
// (a delay: their forwards, backwards and the sends between).
SimulationInput FrameTimes(const SimulationInput& in, int first, int last) {
  const int pp = static_cast<int>(in.stages.size());
  StageTimes after;
  for (int q = last + 1; q < pp; ++q) {
    const double send_ms = q + 1 < pp ? in.send_activation_ms[static_cast<size_t>(q)] : 0;
    after.fwd_ms += in.stages[static_cast<size_t>(q)].fwd_ms + send_ms;
    after.bwd_ms += in.stages[static_cast<size_t>(q)].bwd_ms + send_ms;
  }
  SimulationInput out;
  for (int q = first; q <= last; ++q) {
    out.stages.push_back(in.stages[static_cast<size_t>(q)]);
    out.send_activation_ms.push_back(q + 1 < pp ? in.send_activation_ms[static_cast<size_t>(q)]
                                                : 0);
  }
  out.stages.push_back(after);
  return out;
}

}  // namespace

StatusOr<double> WindowBoundMs(const SimulationInput& pipeline, int first, int last) {
  const Schedule& s = *pipeline.schedule;
  TRIDENT_ASSIGN_OR_RETURN(std::vector<Lane> lanes, PipelineLanes(pipeline, 1, first, last));
  const int width = last - first + 1;
  const size_t window_lanes = lanes.size();
  for (Lane& lane : lanes) {
    for (Action& a : lane.actions) a.stage -= first;
  }
  for (int j = 0; j < s.num_micro_batches; ++j) {  // the delay: one lane per micro-batch
    lanes.push_back(
        {last + 1, j, 1, {{ActionKind::kForward, width, j}, {ActionKind::kBackward, width, j}}});
  }
  const Schedule frame{s.kind, width + 1, 1, s.num_micro_batches, s.split_backward, {}};
  TRIDENT_ASSIGN_OR_RETURN(LaneTimes times,
                           ReplayLanes(frame, FrameTimes(pipeline, first, last), lanes));
  // The positions before: every forward of the window starts t0 later, and the last backward
  // of its first position still crosses them back.
  double arrive_ms = 0, drain_ms = 0;
  for (int q = 0; q < first; ++q) {
    const double send_ms = pipeline.send_activation_ms[static_cast<size_t>(q)];
    arrive_ms += pipeline.stages[static_cast<size_t>(q)].fwd_ms + send_ms;
    drain_ms += pipeline.stages[static_cast<size_t>(q)].bwd_ms + send_ms;
  }
  if (first > 0) drain_ms += pipeline.stages[0].weight_ms;  // 0 unless split
  double makespan_ms = 0, last_backward_ms = 0;
  for (size_t i = 0; i < window_lanes; ++i) {
    if (times[i].empty()) continue;
    makespan_ms = std::max(makespan_ms, times[i].back().end_ms);
    if (lanes[i].position != first) continue;
    for (size_t k = 0; k < times[i].size(); ++k) {
      if (lanes[i].actions[k].kind == ActionKind::kBackward) {
        last_backward_ms = std::max(last_backward_ms, times[i][k].end_ms);
      }
    }
  }
  return arrive_ms + std::max(makespan_ms, last_backward_ms + drain_ms);
}

}  // namespace trident
