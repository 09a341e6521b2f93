// The inner dynamic program of the planner: cut a chain of layers into pipeline stages.
//
// PipeDream-style (Narayanan et al., SOSP 2019, §3.1). The outer search fixes the number of
// pipeline stages P (and tp, micro-batch, schedule, ...) and asks for the contiguous, non-empty
// stage cuts and, in the replicated variant, a replica count per stage that minimize the
// slowest stage. A "unit" is one tensor-parallel group; stage s occupies the units
// [first_unit, first_unit + replicas), stages are laid out left to right from unit 0.
//
// Costs come only through `PartitionCosts`; the DP never reads files or hardware specs.
// Infeasible is a value: a `Partition` with no stages and an infinite bottleneck.
//
// Objective: bottleneck_ms = max( max over stages s of StageMs(stage s),
//                                 max over cuts of BoundaryMs(last layer left of the cut,
//                                                             first unit right of the cut) ).
// The DP is exact for any costs that keep the contract of PartitionCosts (see
// StageMsGrowsWithLayers). Because the objective uses only max and min, the optimum is one of
// the costs returned, bit for bit.
//
// Ties. Among all optimal partitions the functions return the one whose key
//   (first_layer, replicas) of stage P-1, then of stage P-2, ..., then of stage 0
// is lexicographically smallest: the last stage takes as many layers as an optimum allows
// (under 1F1B it holds the fewest micro-batches in flight), then as few replicas; then the
// same for the stage before it, and so on.
//
// Thread safety: the functions are pure; they may run concurrently if `costs` is thread-safe
// for const calls.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace trident {

// Costs the DP may ask for. Every answer is per micro-batch, in milliseconds; infinity means
// infeasible (e.g. the stage does not fit in memory). REQUIRES: answers are >= 0 or +inf,
// never NaN, and the same arguments always give the same answer.
class PartitionCosts {
 public:
  virtual ~PartitionCosts() = default;
  virtual int NumLayers() const = 0;
  // Time per micro-batch of a stage holding layers [first, last] replicated on `replicas`
  // units starting at unit `first_unit`, when it is stage `stage_index` of `num_stages`
  // (memory may depend on the position: 1F1B keeps num_stages - stage_index micro-batches in
  // flight). Includes the replicas' gradient all-reduce as the cost model sees fit; infinity
  // if infeasible.
  virtual double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                         int num_stages) const = 0;
  // StageMs when it is below `limit_ms`, else any value >= limit_ms: what the DP reads of a
  // candidate stage it compares with the best found, so that costs may leave out the work (a
  // memory check, say) that cannot bring a stage under the limit. Default: StageMs.
  virtual double StageMsBelow(int first, int last, int replicas, int first_unit, int stage_index,
                              int num_stages, double /*limit_ms*/) const {
    return StageMs(first, last, replicas, first_unit, stage_index, num_stages);
  }
  // Time to move the activation across the cut after layer `last_of_left` when the right
  // stage starts at unit `boundary_unit` (a two-level network: the cost may depend on whether
  // the boundary crosses a node); per direction.
  virtual double BoundaryMs(int last_of_left, int boundary_unit) const = 0;
  // BoundaryMs(last, boundary_unit) for every last in [0, out.size()), into out: what the DP
  // reads of the cuts at one unit, asked for at once.
  virtual void BoundaryRow(int boundary_unit, std::span<double> out) const {
    for (std::size_t last = 0; last < out.size(); ++last) {
      out[last] = BoundaryMs(static_cast<int>(last), boundary_unit);
    }
  }
  // Whether a stage never gets cheaper by gaining a layer at its front:
  //   StageMs(first - 1, last, r, u, s, P) >= StageMs(first, last, r, u, s, P).
  // True of any model where a layer adds time, parameters and memory; the DP then stops
  // scanning longer stages once one alone cannot beat the best found (about 25x fewer
  // StageMs queries at L = 100, U = 64, P = 16). Costs without this property must return
  // false: the DP stays exact for them and queries every candidate stage.
  virtual bool StageMsGrowsWithLayers() const { return true; }
};

struct Stage {
  int first_layer = 0;
  int last_layer = 0;  // inclusive
  int replicas = 1;
  int first_unit = 0;

  bool operator==(const Stage&) const = default;
};

struct Partition {
  std::vector<Stage> stages;  // empty when infeasible
  // Max over stages of StageMs and over cuts of BoundaryMs; +inf when infeasible.
  double bottleneck_ms = std::numeric_limits<double>::infinity();

  bool feasible() const { return !stages.empty(); }
  // "[0-3]x2@0 [4-7]x2@2 bottleneck 4.5 ms": layers, replicas, first unit.
  std::string ToString() const;
  bool operator==(const Partition&) const = default;
};

// Uniform replication: `num_stages` stages, each on `replicas` units (num_stages * replicas
// units in all). O(L^2 * P) cost queries. Infeasible when num_stages > NumLayers().
// REQUIRES: num_stages >= 1, replicas >= 1.
Partition PartitionUniform(const PartitionCosts& costs, int num_stages, int replicas);

// PartitionUniform given `bound_ms`, the bottleneck of some partition already known (e.g.
// BottleneckOf a neighbouring configuration's stages under these costs): the same result, bit
// for bit, for any bound; when the optimum is at most the bound, candidates whose term exceeds
// it are skipped without a StageMs query, and otherwise the DP runs again without it.
Partition PartitionUniform(const PartitionCosts& costs, int num_stages, int replicas,
                           double bound_ms);

// PartitionUniform(costs, num_stages, replicas) given `below` = PartitionUniform(lower, ...)
// for costs `lower` that no StageMs or BoundaryMs of `costs` is under: `below` itself when
// its stages keep their bottleneck under `costs` (no partition can do better, and every
// optimal one is optimal under `lower` too, where `below` is the least) or when it is
// infeasible (so is every partition), else the DP bounded by that bottleneck. REQUIRES: that
// dominance (the result is the DP's only under it).
Partition PartitionUniformAbove(const PartitionCosts& costs, const Partition& below, int num_stages,
                                int replicas);

// The objective of `stages` under `costs` (see Partition::bottleneck_ms): the largest of their
// StageMs and of the BoundaryMs of their cuts; +inf when there are none.
double BottleneckOf(const PartitionCosts& costs, const std::vector<Stage>& stages);

// Per-stage replication (PipeDream-style): `num_stages` stages whose replica counts, each
// drawn from `allowed_replicas` (e.g. {1, 2, 3, ...} or powers of two; order and duplicates do
// not matter), sum to exactly `units`. Infeasible when no such layout exists (units <
// num_stages, num_stages > NumLayers(), ...). At most L^2 * U * P * |allowed| / 2 StageMs
// queries, far fewer in practice: candidates that cannot beat the best found so far are
// skipped: about 35 ms at L = 100, U = 64, P = 16, allowed {1..64} (figures in partition.cc).
// REQUIRES: num_stages >= 1, units >= 0, every allowed count >= 1.
Partition PartitionReplicated(const PartitionCosts& costs, int num_stages, int units,
                              const std::vector<int>& allowed_replicas);

// The stage cuts for replica counts fixed per stage (`trident plan --replicas`): stage s on
// replicas[s] units from unit replicas[0] + ... + replicas[s - 1]. O(L^2 * P) StageMs queries;
// the same ties as above. REQUIRES: replicas not empty, every count >= 1.
Partition PartitionWithReplicas(const PartitionCosts& costs, const std::vector<int>& replicas);

}  // namespace trident
