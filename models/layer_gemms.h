// The matrix multiplies of one layer's forward pass on one rank, for time models that care
// about shapes (small or thin matrices run far below a device's peak).
//
// Each GemmShape is `count` independent products of an [m × k] by a [k × n] matrix:
// 2·m·n·k·count FLOPs. `attention` marks the weightless score and context products, which
// the backward pass differentiates with respect to both operands (so they appear twice in
// the input gradient and not at all in the weight gradient); the others are linear layers,
// whose input gradient and weight gradient are each one product of the same size.
// Σ 2·m·n·k·count over the list equals AnalyticLayerCost's fwd_flops (exactly when tp divides
// the vocabulary; the LM head's n is ceil(V/t) otherwise).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "models/layer_cost.h"

namespace trident {

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t count = 1;
  bool attention = false;
  double Flops() const { return 2.0 * m * n * k * count; }
  bool operator==(const GemmShape&) const = default;
};

// REQUIRES: as AnalyticLayerCost.
std::vector<GemmShape> LayerForwardGemms(const ModelSpec& model, LayerKind kind,
                                         const LayerShape& shape);

}  // namespace trident
