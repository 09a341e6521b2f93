#include "planner/exact_bounds.h"

#include <algorithm>
#include <cmath>

#include "core/replica_lanes.h"

namespace trident::search_internal {
namespace {

PositionFootprint WithoutTransients(PositionFootprint f) {
  f.grad_transient_bytes = 0;
  f.param_transient_bytes = 0;
  return f;
}

// The largest lane count m (at most M) with m·t below `available_ms`, relaxed by a part in 10⁹
// so rounding never asks for more than the exact checks do; 0 when none.
int MostMicroBatches(double available_ms, double t_ms, int micro_batches) {
  if (t_ms <= 0) return available_ms > 0 ? micro_batches : 0;
  const double most = std::floor(available_ms * (1 + 1e-9) / t_ms);
  return most < 1 ? 0 : static_cast<int>(std::min<double>(most, micro_batches));
}

// The fewest replicas r whose lane ⌈M / r⌉ is at most `most_m` (≥ 1).
int ReplicasFor(int micro_batches, int most_m) { return (micro_batches + most_m - 1) / most_m; }

}  // namespace

Tail Tail::Max(const Tail& o) const {
  return {std::max(optimizer_ms, o.optimizer_ms), std::max(gather_ms, o.gather_ms),
          std::max(exposed_ms, o.exposed_ms), std::max(update_sync_ms, o.update_sync_ms)};
}

ExactBounds::ExactBounds(const PartitionSpace& space)
    : space_(space),
      c_(space.config),
      sc_(*space.stage_costs),
      pipedream_(c_.schedule == ScheduleKind::kPipeDream),
      split_(c_.schedule == ScheduleKind::kZbH1),
      tied_(space.tied_embeddings && c_.pp > 1),
      embedding_(sc_.Footprint(0, 0)),
      memory_context_{.schedule = c_.schedule,
                      .pp = c_.pp,
                      .virtual_stages = c_.v,
                      .sharding = c_.sharding,
                      .reserved_bytes = space.costs->ReservedBytes(),
                      .cp = c_.cp,
                      .fragmentation = space.costs->ActivationFragmentation(),
                      .master_weights = space.master_weights},
      top_level_(space.costs->LevelSpanning(0, static_cast<int>(space.costs->TotalDevices()) - 1)) {
  const int layers = sc_.NumLayers();
  cheapest_send_ms_.assign(static_cast<size_t>(layers) + 1, 0);
  double least = std::numeric_limits<double>::infinity();
  for (int b = layers - 2; b >= 0; --b) {
    for (int level = 0; level <= top_level_; ++level) {
      least =
          std::min(least, space.costs->CollectiveMsAtLevel(
                              Collective::kP2p, static_cast<double>(sc_.OutputBytes(b)), 2, level));
    }
    cheapest_send_ms_[static_cast<size_t>(b)] = least;
  }
}

MemoryContext ExactBounds::ContextOf(int r, int pp) const {
  MemoryContext context = memory_context_;
  context.pp = pp;
  context.micro_batches = LaneMicroBatches(c_.micro_batches, r, 0);
  context.replicas = r;
  context.shard_replicas = c_.shard > 0 ? c_.shard : r;
  return context;
}

// The position's footprint as evaluate.cc holds it in memory: a tied table split over the first
// and last positions is summed outside the buckets, and the last position keeps a copy.
PositionFootprint ExactBounds::HeldFootprint(PositionFootprint f, const Slot& slot) const {
  if (!tied_ || (!slot.first && !slot.last)) return f;
  if (!slot.first) {
    f.param_bytes += embedding_.param_bytes;
    f.grad_bytes += embedding_.grad_bytes;
    f.optimizer_bytes += embedding_.optimizer_bytes;
  }
  f.tied_grad_bytes = embedding_.grad_bytes;
  f.tied_param_bytes = embedding_.param_bytes;
  return f;
}

// The links of a grad group and first shard group of r replicas' cp ranks from unit u, as
// evaluate.cc's LinksOf (RankMap::GradGroup) spans them.
ShardGroupLinks ExactBounds::LinksOf(int u, int r) const {
  const int low = u * c_.UnitRanks();
  auto level_of = [&](int replicas) {
    return space_.costs->LevelSpanning(low,
                                       low + (replicas - 1) * c_.UnitRanks() + (c_.cp - 1) * c_.tp);
  };
  const int shard = c_.sharding == DpSharding::kNone || c_.shard == 0 ? r : c_.shard;
  ShardGroupLinks links;
  links.ranks = r * c_.cp;
  links.level = level_of(r);
  links.shard_ranks = shard * c_.cp;
  links.shard_level = level_of(shard);
  return links;
}

StageTerms ExactBounds::Terms(int first, int last, int q, int r, int u) const {
  const PositionFootprint f = sc_.Footprint(first, last);
  const MemoryContext context = ContextOf(r, c_.pp);
  StageTerms terms;
  terms.memory_bytes = PositionMemory(HeldFootprint(f, SlotOf(q)), q, context).Total();
  const double optimizer_ms =
      space_.costs->OptimizerMs(OptimizerStepBytes(f, PositionMemory(f, q, context), context));
  const ShardingComm comm = ShardingCommOf(*space_.costs, c_.sharding, f, LinksOf(u, r));
  const int m = context.micro_batches;
  if (pipedream_) {
    terms.tail.optimizer_ms = m * optimizer_ms;
    terms.tail.update_sync_ms = m * comm.sync_ms;
    return terms;
  }
  terms.sync_ms = comm.sync_ms;
  terms.tail.optimizer_ms = optimizer_ms;
  terms.tail.gather_ms = comm.gather_ms;
  terms.tail.exposed_ms =
      ExposedMicroBatchCommMs(c_.sharding, comm, m, sc_.Times(first, last).Total());
  return terms;
}

int64_t ExactBounds::MemoryBound(int first, int last, const Slot& slot, int r) const {
  const PositionFootprint f = WithoutTransients(HeldFootprint(sc_.Footprint(first, last), slot));
  return PositionMemory(f, slot.position, ContextOf(r, slot.pp)).Total();
}

// The least r in [r_low, r_high] whose MemoryBound fits. Above one replica (and with cp > 1
// from one) the gradient buckets are held whatever r, and the live activations and weight
// versions only fall as r grows, so the bound falls with r there.
int ExactBounds::LeastFittingReplicas(int first, int last, const Slot& slot, int r_low,
                                      int r_high) const {
  const int64_t limit = space_.memory_limit_bytes;
  auto fits = [&](int r) { return MemoryBound(first, last, slot, r) <= limit; };
  if (r_low > r_high) return kNever;
  if (r_low == 1 && fits(1)) return 1;
  int low = std::max(r_low, c_.cp > 1 ? 1 : 2), high = r_high;
  if (low > high || !fits(high)) return kNever;
  while (low < high) {
    const int mid = low + (high - low) / 2;
    if (fits(mid)) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  return low;
}

// An all-reduce of f's gradients over r replicas' cp ranks at the cheapest level from the
// innermost one that such a group of consecutive ranks can sit in (level units are aligned runs
// of ranks, so a group starting at rank 0 spans the least).
double ExactBounds::SyncBoundMs(const PositionFootprint& f, int r) const {
  const int ranks = r * c_.cp;
  if (ranks == 1) return 0;
  const int span = (r - 1) * c_.UnitRanks() + (c_.cp - 1) * c_.tp;
  double least = std::numeric_limits<double>::infinity();
  for (int level = space_.costs->LevelSpanning(0, span); level <= top_level_; ++level) {
    least = std::min(
        least, space_.costs->CollectiveMsAtLevel(Collective::kAllReduce,
                                                 static_cast<double>(f.grad_bytes), ranks, level));
  }
  return least;
}

// What the sync condition leaves stage q's lane (m·T must stay below it), given r; under
// PipeDream, where the sync and optimizer terms scale with m, whether r passes (+inf or −inf).
// The optimizer's share of the state does not depend on the position.
double ExactBounds::LaneRoomMs(int first, int last, int u, int r, double arrive_ms,
                               const Tail& tail, double best_ms) const {
  const PositionFootprint f = sc_.Footprint(first, last);
  const MemoryContext context = ContextOf(r, c_.pp);
  const double optimizer_ms =
      space_.costs->OptimizerMs(OptimizerStepBytes(f, PositionMemory(f, 0, context), context));
  double sync_ms = 0, gather_ms = 0;
  if (u >= 0) {
    const ShardingComm comm = ShardingCommOf(*space_.costs, c_.sharding, f, LinksOf(u, r));
    sync_ms = comm.sync_ms;
    gather_ms = comm.gather_ms;
  } else {
    sync_ms = SyncBoundMs(f, r);  // free replicas are not sharded
  }
  if (pipedream_) {
    const int m = context.micro_batches;
    const double step_ms =
        m * sc_.Times(first, last).Total() + std::max(m * sync_ms, tail.update_sync_ms) +
        std::max(m * optimizer_ms, tail.optimizer_ms) + tail.gather_ms + tail.exposed_ms;
    return step_ms < best_ms ? std::numeric_limits<double>::infinity()
                             : -std::numeric_limits<double>::infinity();
  }
  return best_ms - arrive_ms - sync_ms - std::max(optimizer_ms, tail.optimizer_ms) -
         std::max(gather_ms, tail.gather_ms) - tail.exposed_ms - tail.update_sync_ms;
}

int ExactBounds::LeastReplicas(int first, int last, const Slot& slot, int u, int r_low, int r_high,
                               double arrive_ms, double drain_ms, const Tail& tail,
                               double best_ms) const {
  const double t_ms = sc_.Times(first, last).Total();
  const double base_ms = pipedream_ ? 0 : arrive_ms + (split_ ? 0 : drain_ms);
  const int most_m = MostMicroBatches(best_ms - tail.Total() - base_ms, t_ms, c_.micro_batches);
  if (most_m == 0) return kNever;
  int r = std::max(r_low, ReplicasFor(c_.micro_batches, most_m));
  const double slack_ms = std::isfinite(best_ms) ? 1e-9 * std::abs(best_ms) : 0;
  // The room left by the sync only shrinks as r grows (a larger group, never a nearer level),
  // while the lane shrinks: from a count that fails, jump to the fewest replicas whose lane fits
  // the room it left.
  while (true) {
    r = LeastFittingReplicas(first, last, slot, r, r_high);
    if (r == kNever) return kNever;
    // Relaxed as MostMicroBatches: the sums here and the branch's are rounded differently.
    const double room_ms = LaneRoomMs(first, last, u, r, arrive_ms, tail, best_ms) + slack_ms;
    if (LaneMicroBatches(c_.micro_batches, r, 0) * t_ms < room_ms) return r;
    if (r >= r_high) return kNever;
    if (pipedream_) {
      ++r;
      continue;
    }
    const int room_m = MostMicroBatches(room_ms, t_ms, c_.micro_batches);
    if (room_m == 0) return kNever;
    r = std::max(r + 1, ReplicasFor(c_.micro_batches, room_m));
  }
}

double ExactBounds::SendMs(int b, int unit) const {
  const int to = unit * c_.UnitRanks();
  const int level = space_.costs->LevelSpanning(to - 1, to);
  return space_.costs->CollectiveMsAtLevel(Collective::kP2p,
                                           static_cast<double>(sc_.OutputBytes(b)), 2, level);
}

int ExactBounds::FixedFirstUnit(int q) const {
  int u = 0;
  for (int i = 0; i < q; ++i) u += space_.replicas[static_cast<size_t>(i)];
  return u;
}

}  // namespace trident::search_internal
