// StageCosts: the layer costs of one (micro-batch size, tp, sequence parallelism, cp,
// recompute) configuration as prefix sums, so the cost of any contiguous range of layers is O(1).
// This is what the partition DP and the step-time estimate read.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "core/recompute.h"
#include "core/status.h"
#include "planner/cost_model.h"
#include "planner/memory_model.h"

namespace trident {

struct RangeTimes {
  double fwd_ms = 0;
  double bwd_input_ms = 0;  // includes the recompute of the configured mode
  double bwd_weight_ms = 0;
  double Total() const { return fwd_ms + bwd_input_ms + bwd_weight_ms; }
};

class StageCosts {
 public:
  // NotFound when a layer has no costs at (micro_batch, tp, sequence_parallel, cp).
  static StatusOr<StageCosts> Create(const CostModel& model, int micro_batch, int tp,
                                     bool sequence_parallel, int cp, RecomputeMode recompute);

  int NumLayers() const { return static_cast<int>(fwd_.size()) - 1; }
  // Layers [first, last], inclusive.
  RangeTimes Times(int first, int last) const {
    return {fwd_[last + 1] - fwd_[first], bwd_input_[last + 1] - bwd_input_[first],
            bwd_weight_[last + 1] - bwd_weight_[first]};
  }
  // Of `copies` chunks each like layers [first, last]: the sums times copies, the largest
  // layer's as they are.
  PositionFootprint Footprint(int first, int last, int64_t copies = 1) const {
    PositionFootprint f;
    f.param_bytes = (param_[last + 1] - param_[first]) * copies;
    f.grad_bytes = (grad_[last + 1] - grad_[first]) * copies;
    f.optimizer_bytes = (optimizer_[last + 1] - optimizer_[first]) * copies;
    f.stash_bytes = (stash_[last + 1] - stash_[first]) * copies;
    f.workspace_bytes = MaxOf(workspace_, first, last);
    f.layer_param_bytes = MaxOf(layer_param_, first, last);
    f.layer_grad_bytes = MaxOf(layer_grad_, first, last);
    f.grad_transient_bytes =
        std::max<int64_t>(0, MaxOf(grad_transient_, first, last) - stash_[last + 1]);
    f.param_transient_bytes =
        std::max<int64_t>(0, MaxOf(param_transient_, first, last) - stash_[last + 1]);
    return f;
  }
  int64_t OutputBytes(int layer) const { return output_bytes_[layer]; }
  int64_t GradBytes(int first, int last) const { return grad_[last + 1] - grad_[first]; }

 private:
  // Prefix sums: x_[i] = Σ of layers [0, i).
  std::vector<double> fwd_, bwd_input_, bwd_weight_;
  std::vector<int64_t> param_, grad_, optimizer_, stash_;
  std::vector<int64_t> output_bytes_;  // per layer
  // x_[k][i]: the largest of layers [i, i + 2^k), for O(1) range maxima.
  using RangeMax = std::vector<std::vector<int64_t>>;
  static void BuildRangeMax(RangeMax* table);
  static int64_t MaxOf(const RangeMax& table, int first, int last) {
    const int k = std::bit_width(static_cast<unsigned>(last - first + 1)) - 1;
    return std::max(table[k][first], table[k][last + 1 - (1 << k)]);
  }
  // grad_transient_[0][i] = 2 · layer i's gradient bytes + stash_[i]: with the stash of layers
  // [i, last] subtracted, what layer i's gradients and their packed buffer add at the end of its
  // backward, when those layers' stashes of the micro-batch are freed.
  // param_transient_[0][i] = 2 · layer i's parameter bytes + stash_[i + 1]: what gathering
  // layer i's parameters (the whole tensors and the all-gather buffer) adds before its input
  // gradient, when its own stash is still held.
  RangeMax workspace_, layer_param_, layer_grad_, grad_transient_, param_transient_;
};

}  // namespace trident
