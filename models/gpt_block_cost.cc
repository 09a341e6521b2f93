// Costs of the GPT block and of the plain MLP block (which is the GPT block's MLP half).
// Symbols: b micro-batch, s sequence length, h hidden, a heads, f ffn_hidden, t tp degree,
// e bytes per element, m = 1 byte per dropout-mask element when dropout > 0, else 0.
#include <cstdint>

#include "models/layer_cost_internal.h"

namespace trident {

namespace {

// GPT block parameters, per rank and whole:
//   LN1, LN2   weight + bias     2 · 2h      replicated
//   QKV        3h·h + 3h                     column-parallel: weight and bias / t
//   proj       h·h + h                       row-parallel: weight / t, bias replicated
//   FC1        h·f + f                       column-parallel: weight and bias / t
//   FC2        f·h + h                       row-parallel: weight / t, bias replicated
// (Row-parallel biases are added after the all-reduce, so every rank holds them whole.)
// total    = 4h² + 2hf + 9h + f, i.e. 12h² + 13h with f = 4h;
//            gpt2-small (h 768): 12·589,824 + 13·768 = 7,087,872.
// per rank = 6h + (4h² + 2hf + 3h + f)/t; gpt2-small with t 2: 4,608 + 3,541,632 = 3,546,240.
void SetGptParams(const LayerDims& d, LayerCost* cost) {
  const int64_t h = d.h, f = d.f, t = d.t;
  int64_t replicated = 2 * 2 * h + h + h;
  int64_t sharded = 4 * h * h + 2 * h * f + 3 * h + f;
  SetLayerParams(d, replicated + sharded / t, replicated + sharded, cost);
}

// Forward matmul FLOPs per rank (2 per multiply-add, heads and f split over t):
//   linear    = 2bs·(3h·h + h·h + 2·h·f)/t           QKV, proj, FC1, FC2
//   attention = 2b·s²·h/t (Q·Kᵀ) + 2b·s²·h/t (P·V)    full s×s, a/t heads of size h/a
// With f = 4h: 24bsh²/t + 4bs²h/t. Example gpt2-small, b 1, s 1024, t 1:
// 24·1024·768² = 14,495,514,624 + 4·1024²·768 = 3,221,225,472 -> 17.7 GFLOP forward.
void SetGptFlops(const LayerDims& d, LayerCost* cost) {
  const double tokens = static_cast<double>(d.tokens), h = static_cast<double>(d.h);
  const double f = static_cast<double>(d.f), t = static_cast<double>(d.t);
  double linear = 2 * tokens * (4 * h * h + 2 * h * f) / t;
  double attention = 2 * 2 * tokens * static_cast<double>(d.s) * h / t;
  SetBlockFlops(linear, attention, d.recompute, cost);
}

// Stashed bytes per rank: Korthikanti et al. (2022) §4, with any element size and tp.
//   replicated  LN1 and LN2 inputs                       2e·bsh
//               QKV input (LN1 output)                   e·bsh
//               FC1 input (LN2 output)                   e·bsh
//               dropout masks after proj and FC2         2m·bsh
//   sharded     Q, K, V                                  3e·bsh/t
//               proj input (attention context)           e·bsh/t
//               GELU input and FC2 input                 2e·bsf/t
//   attention   softmax output                           e·abs²/t
//               its dropout mask and output              (m + e)·abs²/t   when dropout > 0
// With e = 2, m = 1, f = 4h: bsh(10 + 24/t) + 5abs²/t, the paper's 34bsh + 5abs² at t = 1.
// Example gpt2-small, b 1, s 1024, bf16, dropout 0.1, t 1:
// 34·786,432 + 5·12·1024² = 26,738,688 + 62,914,560 = 89,653,248 bytes.
// Selective recompute drops the attention terms; full keeps only the block input, e·bsh.
void SetGptStash(const ModelSpec& model, const LayerDims& d, LayerCost* cost) {
  const int64_t tokens = d.tokens, h = d.h, f = d.f, t = d.t, e = d.e;
  const int64_t m = model.dropout > 0 ? 1 : 0;
  int64_t replicated = tokens * h * (4 * e + 2 * m);
  int64_t sharded = tokens * (4 * e * (h / t) + 2 * e * (f / t));
  int64_t scores = (d.a / t) * d.b * d.s * d.s;  // a·b·s²/t elements
  int64_t attention = e * scores;
  if (m > 0) attention += (m + e) * scores;
  int64_t input = e * tokens * h;
  cost->stashed_bytes =
      BlockStashBytes(d.recompute, replicated + sharded + attention, attention, input);
}

}  // namespace

// Pre-LayerNorm GPT block:
//   x1 = x  + Dropout(Proj(Attention(QKV(LN1(x)))))
//   y  = x1 + Dropout(FC2(GELU(FC1(LN2(x1)))))
// Tensor parallel: 2 forward all-reduces (after proj and FC2) and 2 backward all-reduces
// (the gradients of the QKV and FC1 inputs), each of the e·bsh activation.
LayerCost GptBlockCost(const ModelSpec& model, const LayerDims& d) {
  LayerCost cost;
  SetGptParams(d, &cost);
  SetGptFlops(d, &cost);
  SetGptStash(model, d, &cost);
  const int64_t activation_bytes = d.e * d.tokens * d.h;
  cost.output_bytes = activation_bytes;
  SetTpAllReduces(d, 2, activation_bytes, 2, activation_bytes, &cost);
  return cost;
}

// MLP block: y = x + FC2(GELU(FC1(x))), biases, no norm, no dropout.
//   params   FC1 h·f + f (column: / t), FC2 f·h + h (row: weight / t, bias replicated)
//            total 2hf + f + h; per rank h + (2hf + f)/t. Example h 8, f 32: 552; t 2: 280.
//   FLOPs    linear forward 2bs·2hf/t = 4bshf/t; no attention, so selective recompute
//            redoes nothing and full redoes the forward.
//   stash    FC1 input e·bsh (replicated) + GELU and FC2 inputs 2e·bsf/t; full recompute
//            keeps the FC1 input, which is the block input, e·bsh.
//   tp       1 forward all-reduce (after FC2), 1 backward (the FC1 input gradient), e·bsh.
LayerCost MlpBlockCost(const LayerDims& d) {
  const int64_t tokens = d.tokens, h = d.h, f = d.f, t = d.t, e = d.e;
  LayerCost cost;
  int64_t sharded_params = 2 * h * f + f;
  SetLayerParams(d, h + sharded_params / t, h + sharded_params, &cost);
  double linear = 4.0 * static_cast<double>(tokens) * static_cast<double>(h * f) / t;
  SetBlockFlops(linear, 0, d.recompute, &cost);
  int64_t input = e * tokens * h;
  cost.stashed_bytes = BlockStashBytes(d.recompute, input + 2 * e * tokens * (f / t), 0, input);
  cost.output_bytes = input;
  SetTpAllReduces(d, 1, input, 1, input, &cost);
  return cost;
}

}  // namespace trident
