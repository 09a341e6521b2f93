// Exhaustive partition search for small instances: the reference the DP must match.
//
// Enumerates every composition of the L layers into P non-empty stages and every vector of P
// replica counts drawn from the allowed values that sums to the units, evaluates each
// partition straight from the definition in planner/partition.h, and keeps the best, breaking
// ties by the same documented key. Exponential; meant for L <= 10 and units <= 16.
// Header-only so that tests/planner needs no extra sources.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "planner/partition.h"

namespace trident {

// max over stages of StageMs and over cuts of BoundaryMs (stage s is stage s of stages.size()).
inline double EvaluateBottleneckMs(const PartitionCosts& costs, const std::vector<Stage>& stages) {
  int num_stages = static_cast<int>(stages.size());
  double ms = 0;
  for (int s = 0; s < num_stages; ++s) {
    const Stage& stage = stages[static_cast<std::size_t>(s)];
    ms = std::max(ms, costs.StageMs(stage.first_layer, stage.last_layer, stage.replicas,
                                    stage.first_unit, s, num_stages));
    if (s > 0) ms = std::max(ms, costs.BoundaryMs(stage.first_layer - 1, stage.first_unit));
  }
  return ms;
}

// The tie-break key of partition.h: (first_layer, replicas) from the last stage to the first.
inline std::vector<int> PartitionTieKey(const std::vector<Stage>& stages) {
  std::vector<int> key;
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    key.push_back(it->first_layer);
    key.push_back(it->replicas);
  }
  return key;
}

// Appends to `out` every vector of `parts` values from `values` that sums to `total`.
inline void AppendCompositions(int total, int parts, const std::vector<int>& values,
                               std::vector<int>& prefix, std::vector<std::vector<int>>& out) {
  if (parts == 0) {
    if (total == 0) out.push_back(prefix);
    return;
  }
  for (int v : values) {
    if (v > total) continue;
    prefix.push_back(v);
    AppendCompositions(total - v, parts - 1, values, prefix, out);
    prefix.pop_back();
  }
}

inline std::vector<std::vector<int>> Compositions(int total, int parts,
                                                  const std::vector<int>& values) {
  std::vector<int> prefix;
  std::vector<std::vector<int>> out;
  AppendCompositions(total, parts, values, prefix, out);
  return out;
}

inline std::vector<Stage> MakeStages(const std::vector<int>& layer_counts,
                                     const std::vector<int>& replicas) {
  std::vector<Stage> stages;
  int layer = 0;
  int unit = 0;
  for (std::size_t s = 0; s < layer_counts.size(); ++s) {
    stages.push_back(Stage{layer, layer + layer_counts[s] - 1, replicas[s], unit});
    layer += layer_counts[s];
    unit += replicas[s];
  }
  return stages;
}

// `best` with the partition of `layer_counts` on `replicas` when it is better, or as good with
// the smaller tie key.
inline void KeepBetter(const PartitionCosts& costs, const std::vector<int>& layer_counts,
                       const std::vector<int>& replicas, Partition& best) {
  std::vector<Stage> stages = MakeStages(layer_counts, replicas);
  double ms = EvaluateBottleneckMs(costs, stages);
  if (ms > best.bottleneck_ms || ms == std::numeric_limits<double>::infinity()) return;
  if (ms < best.bottleneck_ms || PartitionTieKey(stages) < PartitionTieKey(best.stages)) {
    best = Partition{stages, ms};
  }
}

// Every count of layers a stage may hold: 1 to L.
inline std::vector<int> AnyLayerCount(const PartitionCosts& costs) {
  std::vector<int> any_count;
  for (int n = 1; n <= costs.NumLayers(); ++n) any_count.push_back(n);
  return any_count;
}

// The optimum over every cut of costs.NumLayers() layers into replicas.size() stages with those
// replica counts, one per stage.
inline Partition BruteForceWithReplicas(const PartitionCosts& costs,
                                        const std::vector<int>& replicas) {
  Partition best;
  for (const std::vector<int>& layer_counts :
       Compositions(costs.NumLayers(), static_cast<int>(replicas.size()), AnyLayerCount(costs))) {
    KeepBetter(costs, layer_counts, replicas, best);
  }
  return best;
}

// The optimum over all partitions of costs.NumLayers() layers into `num_stages` stages whose
// replica counts, each in `allowed_replicas` (distinct, >= 1), sum to `units`.
inline Partition BruteForcePartition(const PartitionCosts& costs, int num_stages, int units,
                                     const std::vector<int>& allowed_replicas) {
  std::vector<std::vector<int>> layer_splits =
      Compositions(costs.NumLayers(), num_stages, AnyLayerCount(costs));
  std::vector<std::vector<int>> replica_splits = Compositions(units, num_stages, allowed_replicas);
  Partition best;
  for (const std::vector<int>& layer_counts : layer_splits) {
    for (const std::vector<int>& replicas : replica_splits) {
      KeepBetter(costs, layer_counts, replicas, best);
    }
  }
  return best;
}

}  // namespace trident
