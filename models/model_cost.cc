#include "models/model_cost.h"

namespace trident {
namespace {

GroupCalls AddGroupCalls(const GroupCalls& a, const GroupCalls& b) {
  return {a.count + b.count, a.bytes + b.bytes};
}

GroupTraffic AddGroupTraffic(const GroupTraffic& a, const GroupTraffic& b) {
  return {AddGroupCalls(a.all_reduce, b.all_reduce), AddGroupCalls(a.all_gather, b.all_gather),
          AddGroupCalls(a.reduce_scatter, b.reduce_scatter)};
}

}  // namespace

LayerCost AddLayerCosts(const LayerCost& a, const LayerCost& b) {
  LayerCost sum;
  sum.fwd_flops = a.fwd_flops + b.fwd_flops;
  sum.bwd_input_flops = a.bwd_input_flops + b.bwd_input_flops;
  sum.bwd_weight_flops = a.bwd_weight_flops + b.bwd_weight_flops;
  sum.recompute_flops = a.recompute_flops + b.recompute_flops;
  sum.params = a.params + b.params;
  sum.total_params = a.total_params + b.total_params;
  sum.param_bytes = a.param_bytes + b.param_bytes;
  sum.output_bytes = a.output_bytes + b.output_bytes;
  sum.stashed_bytes = a.stashed_bytes + b.stashed_bytes;
  sum.tp_fwd = AddGroupTraffic(a.tp_fwd, b.tp_fwd);
  sum.tp_bwd = AddGroupTraffic(a.tp_bwd, b.tp_bwd);
  sum.tp_wgrad = AddGroupTraffic(a.tp_wgrad, b.tp_wgrad);
  sum.cp_fwd = AddGroupTraffic(a.cp_fwd, b.cp_fwd);
  sum.cp_bwd = AddGroupTraffic(a.cp_bwd, b.cp_bwd);
  return sum;
}

ModelCost AnalyticModelCost(const ModelSpec& model, const LayerShape& shape) {
  ModelCost cost;
  for (LayerKind kind : model.ExpandLayers()) {
    cost.layers.push_back(AnalyticLayerCost(model, kind, shape));
    cost.total = AddLayerCosts(cost.total, cost.layers.back());
  }
  return cost;
}

}  // namespace trident
