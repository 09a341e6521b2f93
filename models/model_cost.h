// Analytic costs of a whole model: every layer's LayerCost and their sum.
#pragma once

#include <vector>

#include "core/model_spec.h"
#include "models/layer_cost.h"

namespace trident {

struct ModelCost {
  // layers[i] is the cost of layer i (ModelSpec numbering, `repeat` expanded).
  std::vector<LayerCost> layers;
  // The field-wise sum of `layers`, as if one rank held every layer. So:
  //  - total.params is what one rank of the tp group holds for the whole model, and
  //    total.total_params the model's parameter count. A tied model counts the shared
  //    embedding/head matrix once, under the embedding (the head owns 0 of it; see
  //    LmHeadCost), which gives gpt2-small's 124,439,808.
  //  - total.tp_fwd, tp_bwd and tp_wgrad count every layer's collectives of each kind per
  //    micro-batch, and their bytes are summed over the calls (GroupCalls).
  LayerCost total;

  bool operator==(const ModelCost&) const = default;
};

// The cost of every layer of `model` for `shape`.
// REQUIRES: as AnalyticLayerCost (model.Validate() ok, model.TensorParallelProblem(tp) empty).
ModelCost AnalyticModelCost(const ModelSpec& model, const LayerShape& shape);

// Field-wise sum of two costs (the reduction behind ModelCost::total).
LayerCost AddLayerCosts(const LayerCost& a, const LayerCost& b);

}  // namespace trident
