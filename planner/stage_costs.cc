#include "planner/stage_costs.h"

namespace trident {

StatusOr<StageCosts> StageCosts::Create(const CostModel& model, int micro_batch, int tp,
                                        bool sequence_parallel, int cp, RecomputeMode recompute) {
  StageCosts c;
  const int n = model.NumLayers();
  c.fwd_.assign(n + 1, 0);
  c.bwd_input_.assign(n + 1, 0);
  c.bwd_weight_.assign(n + 1, 0);
  c.param_.assign(n + 1, 0);
  c.grad_.assign(n + 1, 0);
  c.optimizer_.assign(n + 1, 0);
  c.stash_.assign(n + 1, 0);
  c.workspace_.assign(1, {});
  c.layer_param_.assign(1, {});
  c.layer_grad_.assign(1, {});
  c.grad_transient_.assign(1, {});
  c.param_transient_.assign(1, {});
  for (int i = 0; i < n; ++i) {
    const ProfileEntry* e = model.Layer(i, micro_batch, tp, sequence_parallel, cp);
    if (e == nullptr) {
      const std::string sp = sequence_parallel ? " with sequence parallelism" : "";
      const std::string at_cp = cp > 1 ? ", cp " + std::to_string(cp) : "";
      return NotFound("no costs for layer " + std::to_string(i) + " at micro-batch " +
                      std::to_string(micro_batch) + ", tp " + std::to_string(tp) + sp + at_cp +
                      "; use a profile with that micro-batch size and tp degree" + sp +
                      (cp > 1 ? " and cp degree" : ""));
    }
    c.fwd_[i + 1] = c.fwd_[i] + e->fwd_ms;
    c.bwd_input_[i + 1] = c.bwd_input_[i] + e->bwd_input_ms + e->RecomputeMs(recompute);
    c.bwd_weight_[i + 1] = c.bwd_weight_[i] + e->bwd_weight_ms;
    c.param_[i + 1] = c.param_[i] + e->param_bytes;
    c.grad_[i + 1] = c.grad_[i] + e->grad_bytes;
    c.optimizer_[i + 1] = c.optimizer_[i] + e->optimizer_bytes;
    c.stash_[i + 1] = c.stash_[i] + e->StashedBytes(recompute);
    c.workspace_[0].push_back(e->WorkspaceBytes(recompute));
    c.layer_param_[0].push_back(e->param_bytes);
    c.layer_grad_[0].push_back(e->grad_bytes);
    c.grad_transient_[0].push_back(2 * e->grad_bytes + c.stash_[i]);
    c.param_transient_[0].push_back(2 * e->param_bytes + c.stash_[i + 1]);
    c.output_bytes_.push_back(e->output_bytes);
  }
  for (RangeMax* table :
       {&c.workspace_, &c.layer_param_, &c.layer_grad_, &c.grad_transient_, &c.param_transient_}) {
    BuildRangeMax(table);
  }
  return c;
}

void StageCosts::BuildRangeMax(RangeMax* table) {
  const size_t n = table->front().size();
  for (size_t width = 2; width <= n; width *= 2) {
    const std::vector<int64_t>& half = table->back();
    std::vector<int64_t> level;
    for (size_t i = 0; i + width <= n; ++i) level.push_back(std::max(half[i], half[i + width / 2]));
    table->push_back(std::move(level));
  }
}

}  // namespace trident
