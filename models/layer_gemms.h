// The matrix multiplies of one layer's forward pass on one rank, for time models that care
// about shapes (small or thin matrices run far below a device's peak).
//
// Each GemmShape (models/layer_shapes.h) is `count` independent products of an [m × k] by a
// [k × n] matrix: 2·m·n·k·count FLOPs. `attention` marks the weightless score and context
// products, which the backward pass differentiates with respect to both operands (so they
// appear twice in the input gradient and not at all in the weight gradient); the others are
// linear layers, whose input gradient and weight gradient are each one product of the same size.
// The blocks' FLOPs in AnalyticLayerCost are Σ 2·m·n·k·count over this list; the LM head's
// GEMM has n = ceil(V/t) while its FLOPs count V/t (equal when tp divides the vocabulary).
#pragma once

#include <vector>

#include "core/model_spec.h"
#include "models/layer_cost.h"
#include "models/layer_shapes.h"

namespace trident {

// The forward GEMMs of tp rank 0 (LayerShapes::ForwardGemms).
// REQUIRES: as AnalyticLayerCost.
std::vector<GemmShape> LayerForwardGemms(const ModelSpec& model, LayerKind kind,
                                         const LayerShape& shape);

}  // namespace trident
