// Helpers shared by the per-family layer cost files. Not part of the models/ API: include it
// only from models/*.cc. (The project has one namespace, so the names say they are for layers.)
//
// Every figure is for one micro-batch on one rank of a tp group (see models/layer_cost.h),
// summed over the shapes of models/layer_shapes.h.
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "models/layer_cost.h"
#include "models/layer_shapes.h"

namespace trident {

// What a layer's cost is computed from.
struct LayerCostInputs {
  LayerShapes shapes;  // tp rank 0, which holds the most (ceil(V/t)) vocabulary rows
  TokenBlock tokens;   // b sequences of s/c tokens (this cp rank's; s under no cp)
  int64_t e = 4;       // bytes per element of the training dtype
  RecomputeMode recompute = RecomputeMode::kNone;

  int64_t Tp() const { return shapes.split.tp; }
  int64_t Cp() const { return shapes.split.cp; }
  bool SequenceParallel() const { return shapes.split.sequence_parallel; }
  // Bytes of one whole [b, s, h] activation, the payload of a block's tp collectives: e·bsh.
  int64_t ActivationBytes() const;
  // Bytes of the [b, s, h] activation this rank's residual stream holds: e·bsh, or e·bsh/t
  // under sequence parallelism. What a layer hands to the next.
  int64_t LocalActivationBytes() const;
};
LayerCostInputs MakeLayerCostInputs(const ModelSpec& model, LayerKind kind,
                                    const LayerShape& shape);

// params, total_params and param_bytes: the parameter shapes summed, this rank's and whole.
void SetLayerParams(const LayerCostInputs& in, LayerCost* cost);

// Bytes of the forward stash kept under in.recompute: every stashed tensor's elements times e
// (activations), 1 (dropout masks) or 4 (token ids); the fp32 norm statistics are left out.
int64_t LayerStashBytes(const LayerCostInputs& in);

// Sets the forward, input-gradient, weight-gradient and recompute FLOPs of a block from its
// forward GEMMs, split into weighted matmuls (linear) and the weightless attention core (the
// score product Q·Kᵀ and the context product P·V):
//   fwd        = linear + attention
//   bwd_input  = linear + 2·attention   (dX of a linear costs its forward; the attention
//                                        products need the gradient of both operands)
//   bwd_weight = linear                 (dW of a linear costs its forward; attention has none)
//   recompute  = 0 (none), attention (selective), linear + attention (full)
// So fwd + bwd = 3·(linear + attention): 72bsh² + 12bs²h for a GPT block with f = 4h.
void SetBlockFlops(const LayerCostInputs& in, LayerCost* cost);

// `count` calls of `bytes` each; none when t = 1 (no tp group).
GroupCalls TpCallsOf(const LayerCostInputs& in, int count, int64_t bytes);
// `count` calls of `bytes` each; none when c = 1 (no cp group).
GroupCalls CpCallsOf(const LayerCostInputs& in, int count, int64_t bytes);

// The cost of one layer, by family.
LayerCost BlockCost(const LayerCostInputs& in, int tp_regions);  // block_cost.cc
LayerCost EmbeddingCost(const LayerCostInputs& in);              // vocab_layer_cost.cc
LayerCost FinalNormCost(const LayerCostInputs& in);              // vocab_layer_cost.cc
LayerCost LmHeadCost(const LayerCostInputs& in);                 // vocab_layer_cost.cc

}  // namespace trident
