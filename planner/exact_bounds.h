// The lower bounds planner/exact_partitions.h prunes with, for one configuration: what a stage
// at a given position, on given layers and replicas, must at least cost in memory, time and
// communication in any partition whose simulated step beats a given one. Each is at most what
// planner/evaluate.h charges (its formulas on the stage's own layers; a position's tied
// embedding copy only adds). Internal to the planner.
//
// Necessary for stage q on layers [first, last] with r replicas (m = ⌈M / r⌉ micro-batches on
// its busiest lane, T = F + B + W of one micro-batch), given lower bounds `arrive` (Σ F + send
// of the stages before it) and `drain` (Σ B + send of them) and the terms `tail` the stages
// before it already add to the step (exact_partitions.h):
//   memory     its memory without the layers' transients fits the limit
//   lane       arrive + drain + m·T + tail < best        (1f1b, gpipe: lane_bound_test's
//              arrive + m·T + tail < best                 simple bounds; zb_h1)
//              m·T + tail < best                          (PipeDream: the busiest lane)
//   sync       arrive + m·T + sync + max(optimizer, tail's) + the tail's other terms < best
//              (evaluate.h: the step ends no earlier than the position's last lane plus its
//              exposed sync, then the largest optimizer step, gather and exposed collectives);
//              PipeDream: m·T + max(m·sync, tail's) + max(m·optimizer, tail's) < best
// where sync is its gradient collective on its replicas' links (unknown unit: the cheapest
// level a group of its ranks can span, every level from there costed).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "planner/cost_model.h"
#include "planner/memory_model.h"
#include "planner/search_costs.h"
#include "planner/sharding_comm.h"
#include "planner/stage_costs.h"

namespace trident::search_internal {

inline constexpr int kNever = std::numeric_limits<int>::max();

// The step's terms after the makespan that evaluate.h takes the largest of over positions.
struct Tail {
  double optimizer_ms = 0;
  double gather_ms = 0;
  double exposed_ms = 0;      // the per-micro-batch collectives left exposed
  double update_sync_ms = 0;  // PipeDream: the all-reduces before its updates
  double Total() const { return optimizer_ms + gather_ms + exposed_ms + update_sync_ms; }
  Tail Max(const Tail& o) const;
};

struct PartitionSpace {
  const CostModel* costs = nullptr;
  const StageCosts* stage_costs = nullptr;
  Config config;  // pp, schedule, micro-batches, sharding, tp · cp units; v = 1
  int units = 0;  // tp · cp groups the stages' replicas sum to
  // Replicas of each stage (config.pp entries, summing to `units`); empty: any count from 1 to
  // M, summing to `units` (no sharding only).
  std::vector<int> replicas;
  int64_t memory_limit_bytes = 0;
  bool master_weights = false;   // MemoryContext::master_weights
  bool tied_embeddings = false;  // the model's; the first and last positions share the table
};

// Where a stage sits, as its memory sees it: the live activations of `position` among `pp`
// positions, and whether it holds the tied table as the first or the last position. A stage k
// positions from the end of a pipeline of any depth sits at least at {0, k} (the schedules'
// live activations grow with the positions after it, or with pp, never shrink).
struct Slot {
  int position = 0;
  int pp = 1;
  bool first = false;
  bool last = false;
};

// What stage q on layers [first, last] and r replicas adds to the step beside its lanes.
struct StageTerms {
  int64_t memory_bytes = 0;  // evaluate.h's, with the tied table where the position holds it
  double sync_ms = 0;        // its gradient collective after its last backward
  Tail tail;
};

class ExactBounds {
 public:
  explicit ExactBounds(const PartitionSpace& space);

  const PartitionSpace& space() const { return space_; }
  bool FreeReplicas() const { return space_.replicas.empty(); }
  bool Pipedream() const { return pipedream_; }
  bool Split() const { return split_; }

  // The exact terms of stage q from unit u (planner/evaluate.h's for a v = 1 position).
  StageTerms Terms(int first, int last, int q, int r, int u) const;

  // Stage q of this configuration.
  Slot SlotOf(int q) const { return {q, c_.pp, q == 0, q == c_.pp - 1}; }

  // The least r in [r_low, r_high] the conditions above allow (u < 0: unknown), or kNever.
  // A stage on more layers only costs more (in memory, lane time, sync and optimizer step), so
  // the counts the conditions allow only shrink as `last` grows: the least r never falls, and
  // kNever stays kNever.
  int LeastReplicas(int first, int last, const Slot& slot, int u, int r_low, int r_high,
                    double arrive_ms, double drain_ms, const Tail& tail, double best_ms) const;

  // The least p2p time of a boundary after layer b or later, at any level; 0 with one layer.
  double CheapestSendMs(int b) const { return cheapest_send_ms_[static_cast<size_t>(b)]; }
  // The p2p time of the boundary after layer b into unit `unit`, on the link between the ranks
  // either side (evaluate.cc's BoundaryTransfers).
  double SendMs(int b, int unit) const;

  // The first unit of position q when the replicas are fixed.
  int FixedFirstUnit(int q) const;

 private:
  MemoryContext ContextOf(int r, int pp) const;
  PositionFootprint HeldFootprint(PositionFootprint f, const Slot& slot) const;
  int64_t MemoryBound(int first, int last, const Slot& slot, int r) const;
  int LeastFittingReplicas(int first, int last, const Slot& slot, int r_low, int r_high) const;
  ShardGroupLinks LinksOf(int u, int r) const;
  double SyncBoundMs(const PositionFootprint& f, int r) const;
  double LaneRoomMs(int first, int last, int u, int r, double arrive_ms, const Tail& tail,
                    double best_ms) const;

  const PartitionSpace& space_;
  const Config& c_;
  const StageCosts& sc_;
  const bool pipedream_, split_, tied_;
  const PositionFootprint embedding_;
  const MemoryContext memory_context_;  // every stage's; ContextOf sets its lane's counts
  const int top_level_;
  std::vector<double> cheapest_send_ms_;
};

}  // namespace trident::search_internal
