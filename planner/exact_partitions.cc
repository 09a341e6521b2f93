#include "planner/exact_partitions.h"

#include <algorithm>

#include "core/replica_lanes.h"
#include "planner/memory_model.h"
#include "planner/sharding_comm.h"

namespace trident::search_internal {
namespace {

// The enumeration's fixed inputs and the partition built so far.
class Enumerator {
 public:
  Enumerator(const PartitionSpace& space, const double* best_ms,
             const std::function<void(std::vector<PlanStage>)>& leaf)
      : space_(space),
        c_(space.config),
        sc_(*space.stage_costs),
        best_ms_(best_ms),
        leaf_(leaf),
        layers_(sc_.NumLayers()),
        stages_(c_.pp),
        pipedream_(c_.schedule == ScheduleKind::kPipeDream),
        split_(c_.schedule == ScheduleKind::kZbH1),
        memory_context_{.schedule = c_.schedule,
                        .pp = c_.pp,
                        .virtual_stages = c_.v,
                        .sharding = c_.sharding,
                        .reserved_bytes = space.costs->ReservedBytes(),
                        .cp = c_.cp,
                        .fragmentation = space.costs->ActivationFragmentation(),
                        .master_weights = space.master_weights} {}

  int64_t Run() {
    Dfs(0, 0, 0, 0.0, 0.0, 0.0);
    return branches_;
  }

 private:
  // What stage s adds besides its lane: what the step adds after the lanes for its position
  // (its optimizer step; under PipeDream m of them, each after a gradient all-reduce), whether
  // it fits.
  struct Placed {
    double tail_ms = 0;
    bool fits = true;
  };

  int ReplicasOf(int position) const { return space_.replicas[static_cast<size_t>(position)]; }

  // PipeDream's gradient all-reduce after each of the position's m updates: over its r
  // replicas' cp ranks (RankMap::GradGroup), at the level from its first rank to its last
  // replica's last cp rank of tp rank 0.
  double UpdateSyncMs(const PositionFootprint& f, int first_unit, int r) const {
    const int low = first_unit * c_.UnitRanks();
    const int high = low + (r - 1) * c_.UnitRanks() + (c_.cp - 1) * c_.tp;
    ShardGroupLinks links;
    links.ranks = r * c_.cp;
    links.level = space_.costs->LevelSpanning(low, high);
    links.shard_ranks = links.ranks;
    links.shard_level = links.level;
    return ShardingCommOf(*space_.costs, DpSharding::kNone, f, links).sync_ms;
  }

  // Stage s's lane bound: layers [a, b] on r replicas, m micro-batches each, after `prefix_ms`.
  double LaneMs(int a, int b, int m, double prefix_ms) const {
    return (pipedream_ ? 0 : prefix_ms) + m * sc_.Times(a, b).Total();
  }

  // The rest of what stage s adds, once its lane is known not to end the branch.
  Placed Place(int s, int a, int b, int r, int m, int first_unit) const {
    const PositionFootprint f = sc_.Footprint(a, b);
    MemoryContext context = memory_context_;
    context.micro_batches = m;
    context.replicas = r;
    context.shard_replicas = c_.shard > 0 ? c_.shard : r;
    const MemoryBreakdown memory = PositionMemory(f, s, context);
    Placed placed;
    placed.fits = memory.Total() <= space_.memory_limit_bytes;
    placed.tail_ms =
        (pipedream_ ? m : 1) * space_.costs->OptimizerMs(OptimizerStepBytes(f, memory, context));
    if (pipedream_) placed.tail_ms += m * UpdateSyncMs(f, first_unit, r);
    return placed;
  }

  // The boundary after layer b, at unit `unit` (the next stage's first): its p2p time on the
  // link between the ranks either side.
  double SendMs(int b, int unit) const {
    const int to = unit * c_.UnitRanks();
    const int level = space_.costs->LevelSpanning(to - 1, to);
    return space_.costs->CollectiveMsAtLevel(Collective::kP2p,
                                             static_cast<double>(sc_.OutputBytes(b)), 2, level);
  }

  // Lower bound of the later stages' lanes: after `prefix_ms`, the layers after b on the units
  // left.
  double RestMs(int b, int units_left, double prefix_ms) const {
    if (b + 1 >= layers_) return 0;
    const double rest = c_.micro_batches * sc_.Times(b + 1, layers_ - 1).Total() / units_left;
    return (pipedream_ ? 0 : prefix_ms) + rest;
  }

  // The replica counts stage s may take from unit u: the position's, or (free) 1 up to what
  // leaves one unit to each later stage, at most M; the last stage takes every unit left.
  std::pair<int, int> ReplicaRange(int s, int u) const {
    if (!space_.replicas.empty()) return {ReplicasOf(s), ReplicasOf(s)};
    if (s == stages_ - 1) return {space_.units - u, space_.units - u};
    return {1, std::min(space_.units - u - (stages_ - s - 1), c_.micro_batches)};
  }

  // Stages s.. from layer a and unit u, `bound_ms` the placed lanes' largest bound and
  // `tail_ms` the largest of their positions' tails.
  void Dfs(int s, int a, int u, double prefix_ms, double bound_ms, double tail_ms) {
    ++branches_;
    const auto [r_low, r_high] = ReplicaRange(s, u);
    const int b_low = s == stages_ - 1 ? layers_ - 1 : a;
    const int b_high = layers_ - (stages_ - s);
    for (int r = r_low; r <= r_high; ++r) {
      const int units_left = space_.units - u - r;
      if (s + 1 < stages_ && units_left < 1) continue;
      const int m = LaneMicroBatches(c_.micro_batches, r, 0);
      for (int b = b_low; b <= b_high; ++b) {
        // The lane and the tail only grow with b: once either bound reaches the best, so do
        // those of every later b. The lane alone is checked first, as it is the cheaper.
        const double bound = std::max(bound_ms, LaneMs(a, b, m, prefix_ms));
        if (bound + tail_ms >= *best_ms_) break;
        const Placed placed = Place(s, a, b, r, m, u);
        const double tail = std::max(tail_ms, placed.tail_ms);
        if (bound + tail >= *best_ms_) break;
        if (!placed.fits) continue;
        stages_out_.push_back({a, b - a + 1, r, c_.recompute, 0, 0});
        if (s + 1 == stages_) {
          leaf_(stages_out_);
        } else {
          const RangeTimes t = sc_.Times(a, b);
          const double send = SendMs(b, u + r);
          const double next_prefix = prefix_ms + (split_ ? t.fwd_ms + send : t.Total() + 2 * send);
          const double rest = RestMs(b, units_left, next_prefix);
          if (std::max(bound, rest) + tail < *best_ms_) {
            Dfs(s + 1, b + 1, u + r, next_prefix, bound, tail);
          }
        }
        stages_out_.pop_back();
      }
    }
  }

  const PartitionSpace& space_;
  const Config& c_;
  const StageCosts& sc_;
  const double* best_ms_;
  const std::function<void(std::vector<PlanStage>)>& leaf_;
  const int layers_;
  const int stages_;
  const bool pipedream_;
  const bool split_;
  // The memory context every stage shares; Place sets its lane's counts.
  const MemoryContext memory_context_;
  std::vector<PlanStage> stages_out_;
  int64_t branches_ = 0;
};

}  // namespace

int64_t EnumeratePartitionsBelow(const PartitionSpace& space, const double* best_ms,
                                 const std::function<void(std::vector<PlanStage>)>& leaf) {
  return Enumerator(space, best_ms, leaf).Run();
}

}  // namespace trident::search_internal
