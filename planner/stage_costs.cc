#include "planner/stage_costs.h"

#include <algorithm>

namespace trident {

StatusOr<StageCosts> StageCosts::Create(const CostModel& model, int micro_batch, int tp,
                                        RecomputeMode recompute) {
  StageCosts c;
  const int n = model.NumLayers();
  c.fwd_.assign(n + 1, 0);
  c.bwd_input_.assign(n + 1, 0);
  c.bwd_weight_.assign(n + 1, 0);
  c.param_.assign(n + 1, 0);
  c.grad_.assign(n + 1, 0);
  c.optimizer_.assign(n + 1, 0);
  c.stash_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    const ProfileEntry* e = model.Layer(i, micro_batch, tp);
    if (e == nullptr) {
      return NotFound("no costs for layer " + std::to_string(i) + " at micro-batch " +
                      std::to_string(micro_batch) + ", tp " + std::to_string(tp) +
                      "; use a profile with that micro-batch size and tp degree");
    }
    c.fwd_[i + 1] = c.fwd_[i] + e->fwd_ms;
    c.bwd_input_[i + 1] = c.bwd_input_[i] + e->bwd_input_ms + e->RecomputeMs(recompute);
    c.bwd_weight_[i + 1] = c.bwd_weight_[i] + e->bwd_weight_ms;
    c.param_[i + 1] = c.param_[i] + e->param_bytes;
    c.grad_[i + 1] = c.grad_[i] + e->grad_bytes;
    c.optimizer_[i + 1] = c.optimizer_[i] + e->optimizer_bytes;
    c.stash_[i + 1] = c.stash_[i] + e->StashedBytes(recompute);
    c.workspace_.push_back(e->WorkspaceBytes(recompute));
    c.output_bytes_.push_back(e->output_bytes);
  }
  return c;
}

RangeTimes StageCosts::Times(int first, int last) const {
  return {fwd_[last + 1] - fwd_[first], bwd_input_[last + 1] - bwd_input_[first],
          bwd_weight_[last + 1] - bwd_weight_[first]};
}

PositionFootprint StageCosts::Footprint(int first, int last) const {
  PositionFootprint f;
  f.param_bytes = param_[last + 1] - param_[first];
  f.grad_bytes = grad_[last + 1] - grad_[first];
  f.optimizer_bytes = optimizer_[last + 1] - optimizer_[first];
  f.stash_bytes = stash_[last + 1] - stash_[first];
  f.workspace_bytes = *std::max_element(workspace_.begin() + first, workspace_.begin() + last + 1);
  return f;
}

}  // namespace trident
