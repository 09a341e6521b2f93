#include "planner/lane_bound.h"

#include <algorithm>
#include <cstdint>

namespace trident {
namespace {

struct Ends {
  double last_backward_ms = 0;
  double lane_ms = 0;
};

// Every forward first, then every backward (gpipe, or a warm-up that covers the lane).
Ends AllForwardsFirst(const LaneBoundInput& in) {
  const StageTimes& t = in.stage;
  const int m = in.micro_batches;
  const double x0 = in.arrive_ms + std::max(m * t.fwd_ms, t.fwd_ms + in.round_trip_ms);
  const double last =
      std::max(x0 + m * t.bwd_ms, in.arrive_ms + m * t.fwd_ms + in.round_trip_ms + t.bwd_ms);
  return {last, last};
}

// The chain of micro-batches w + 1 apart: F(i + w + 1) follows B(i) in the lane's list, and B(i)
// waits a round trip after F(i) ends, so every w + 1 micro-batches cost F + B + RT at least.
double ChainedLastForwardMs(const LaneBoundInput& in, int w) {
  const StageTimes& t = in.stage;
  const int cycles = (in.micro_batches - 1) / (w + 1);
  return in.arrive_ms + t.fwd_ms + cycles * (t.fwd_ms + t.bwd_ms + in.round_trip_ms);
}

Ends OneFOneB(const LaneBoundInput& in, int w) {
  const StageTimes& t = in.stage;
  const int m = in.micro_batches;
  const double x0 = in.arrive_ms + std::max((w + 1) * t.fwd_ms, t.fwd_ms + in.round_trip_ms);
  const double last_forward =
      std::max(x0 + (m - w - 1) * (t.fwd_ms + t.bwd_ms), ChainedLastForwardMs(in, w));
  const double last = last_forward + std::max(in.round_trip_ms, w * t.bwd_ms) + t.bwd_ms;
  return {last, last};
}

Ends ZbH1(const LaneBoundInput& in, int w) {
  const StageTimes& t = in.stage;
  const int m = in.micro_batches;
  const double x0 = in.arrive_ms + std::max((w + 1) * t.fwd_ms, t.fwd_ms + in.round_trip_ms);
  double last_forward =
      in.arrive_ms + m * t.fwd_ms + (m - 1 - w) * t.bwd_ms + std::max(0, m - in.pp) * t.weight_ms;
  if (w < m - 1) last_forward = std::max(last_forward, x0 + (m - 1 - w) * (t.fwd_ms + t.bwd_ms));
  last_forward = std::max(last_forward, ChainedLastForwardMs(in, w));
  const double last = last_forward + std::max(in.round_trip_ms, w * t.bwd_ms) + t.bwd_ms;
  const double lane =
      std::max(last + t.weight_ms, x0 + (m - w - 1) * t.fwd_ms + m * (t.bwd_ms + t.weight_ms));
  return {last, lane};
}

}  // namespace

LaneBound LaneBoundOf(const LaneBoundInput& in) {
  const int w = std::min(in.warm_up, in.micro_batches - 1);
  Ends ends;
  if (in.kind == ScheduleKind::kZbH1) {
    ends = ZbH1(in, w);
  } else if (in.kind == ScheduleKind::kGpipe || w == in.micro_batches - 1) {
    ends = AllForwardsFirst(in);
  } else {
    ends = OneFOneB(in, w);
  }
  return {ends.lane_ms, std::max(ends.lane_ms, ends.last_backward_ms + in.drain_ms)};
}

double PairBoundOf(const PairBoundInput& in) {
  const int64_t m = in.micro_batches;
  const int64_t lane = (m + in.replicas - 1) / in.replicas;
  if (in.warm_up >= lane - 1) return 0;
  const int64_t cycle = int64_t{in.replicas} * (in.warm_up + 1);
  const int64_t delta = cycle - int64_t{in.next_replicas} * in.next_warm_up;
  if (delta < 1 || m - 1 < cycle) return 0;
  const int64_t steps = (m - 1 - cycle) / delta + 1;
  const double tau =
      in.stage.fwd_ms + in.stage.bwd_ms + in.next.fwd_ms + in.next.bwd_ms + 2 * in.send_ms;
  return in.arrive_ms + in.stage.fwd_ms + steps * tau + in.round_trip_ms + in.stage.bwd_ms +
         in.drain_ms;
}

}  // namespace trident
