// Helpers shared by the per-family layer cost files. Not part of the models/ API: include it
// only from models/*.cc. (The project has one namespace, so the names say they are for layers.)
//
// Every figure is for one micro-batch on one rank of a tp group (see models/layer_cost.h).
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "models/layer_cost.h"

namespace trident {

// The sizes every layer family uses, read once from the model and the shape.
struct LayerDims {
  int64_t b = 1;       // micro-batch (sequences)
  int64_t s = 1;       // sequence length
  int64_t tokens = 1;  // b·s
  int64_t h = 0;       // hidden
  int64_t a = 0;       // attention heads
  int64_t f = 0;       // MLP inner width
  int64_t v = 0;       // vocabulary size
  int64_t t = 1;       // tensor-parallel degree
  int64_t e = 4;       // bytes per element of the training dtype
  RecomputeMode recompute = RecomputeMode::kNone;
};
LayerDims MakeLayerDims(const ModelSpec& model, const LayerShape& shape);

// Vocabulary rows one rank of a vocabulary-parallel table holds: ceil(v / t). Megatron pads
// the vocabulary to a multiple of t (and of 128) so that every rank holds the same rows; we
// pad only to t. Example: v = 50257, t = 4 -> 12565 rows (4 · 12565 = 50260 >= 50257).
int64_t VocabRowsPerRank(int64_t v, int64_t t);

// Sets the forward, input-gradient, weight-gradient and recompute FLOPs of a block from its
// forward FLOPs split into weighted matmuls (`linear_fwd`) and the weightless attention core
// (`attention_fwd`: the score product Q·Kᵀ and the context product P·V).
//   fwd        = linear + attention
//   bwd_input  = linear + 2·attention   (dX of a linear costs its forward; the attention
//                                        products need the gradient of both operands)
//   bwd_weight = linear                 (dW of a linear costs its forward; attention has none)
//   recompute  = 0 (none), attention (selective), linear + attention (full)
// So fwd + bwd = 3·(linear + attention): 72bsh² + 12bs²h for a GPT block with f = 4h.
void SetBlockFlops(double linear_fwd, double attention_fwd, RecomputeMode mode, LayerCost* cost);

// Bytes a block stashes for `mode`: everything (`all_bytes`) with none; everything but the
// attention-core tensors (`attention_bytes`, the a·b·s² terms) with selective; only the
// block's input (`input_bytes`) with full, which reruns the forward from it.
int64_t BlockStashBytes(RecomputeMode mode, int64_t all_bytes, int64_t attention_bytes,
                        int64_t input_bytes);

// Records the tp all-reduces a layer issues per micro-batch. A group of one rank needs no
// collective, so with t == 1 the counts and payloads stay 0.
void SetTpAllReduces(const LayerDims& d, int fwd_count, int64_t fwd_bytes, int bwd_count,
                     int64_t bwd_bytes, LayerCost* cost);

// Sets params, total_params and param_bytes (= params · e).
void SetLayerParams(const LayerDims& d, int64_t rank_params, int64_t total_params, LayerCost* cost);

// One function per layer family. REQUIRES: as AnalyticLayerCost.
LayerCost GptBlockCost(const ModelSpec& model, const LayerDims& d);    // gpt_block_cost.cc
LayerCost LlamaBlockCost(const ModelSpec& model, const LayerDims& d);  // llama_block_cost.cc
LayerCost MlpBlockCost(const LayerDims& d);                            // gpt_block_cost.cc
LayerCost EmbeddingCost(const ModelSpec& model, const LayerDims& d);   // vocab_layer_cost.cc
LayerCost FinalNormCost(const ModelSpec& model, const LayerDims& d);   // vocab_layer_cost.cc
LayerCost LmHeadCost(const ModelSpec& model, const LayerDims& d);      // vocab_layer_cost.cc

}  // namespace trident
