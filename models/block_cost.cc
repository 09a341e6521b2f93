// Costs of the blocks — GPT, Llama and the plain MLP block (the GPT block's MLP half) — summed
// over their shapes (models/layer_shapes.h). The derivations below are what those sums come to.
// Symbols: b micro-batch, s sequence length, h hidden, a heads, k kv_heads, d = h/a head size,
// kvd = k·d key/value width, f ffn_hidden, t tp degree, e bytes per element, m = 1 byte per
// dropout-mask element when dropout > 0, else 0.
#include "models/layer_cost_internal.h"

namespace trident {

// Pre-LayerNorm GPT block:
//   x1 = x  + Dropout(Proj(Attention(QKV(LN1(x)))))
//   y  = x1 + Dropout(FC2(GELU(FC1(LN2(x1)))))
//
// Parameters, per rank and whole:
//   LN1, LN2   weight + bias     2 · 2h      replicated
//   QKV        3h·h + 3h                     column-parallel: weight and bias / t
//   proj       h·h + h                       row-parallel: weight / t, bias replicated
//   FC1        h·f + f                       column-parallel: weight and bias / t
//   FC2        f·h + h                       row-parallel: weight / t, bias replicated
// (Row-parallel biases are added after the all-reduce, so every rank holds them whole.)
// total    = 4h² + 2hf + 9h + f, i.e. 12h² + 13h with f = 4h;
//            gpt2-small (h 768): 12·589,824 + 13·768 = 7,087,872.
// per rank = 6h + (4h² + 2hf + 3h + f)/t; gpt2-small with t 2: 4,608 + 3,541,632 = 3,546,240.
//
// Forward matmul FLOPs per rank (2 per multiply-add, heads and f split over t):
//   linear    = 2bs·(3h·h + h·h + 2·h·f)/t           QKV, proj, FC1, FC2
//   attention = 2b·s²·h/t (Q·Kᵀ) + 2b·s²·h/t (P·V)    full s×s, a/t heads of size h/a
// With f = 4h: 24bsh²/t + 4bs²h/t. Example gpt2-small, b 1, s 1024, t 1:
// 24·1024·768² = 14,495,514,624 + 4·1024²·768 = 3,221,225,472 -> 17.7 GFLOP forward.
//
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
// Sequence parallel: the replicated terms hold S/t tokens, so everything divides by t:
// bsh(34 + 5as/h)/t at e = 2 (Korthikanti et al. Table 2, "sequence parallelism"), 34bsh/t with
// selective recompute, e·bsh/t with full. Example gpt2-small as above, t 2: 44,826,624 bytes.
//
// Tensor parallel: 2 forward all-reduces (after proj and FC2) and 2 backward all-reduces
// (the gradients of the QKV and FC1 inputs), each of the e·bsh activation.
//
// Llama block:
//   x1 = x  + O(Attention(RoPE(Q(N1(x))), RoPE(K(N1(x))), V(N1(x))))
//   y  = x1 + Down(SiLU(Gate(N2(x1))) ⊙ Up(N2(x1)))
//
// Parameters (no biases; RMSNorm has a weight only):
//   N1, N2           2h              replicated
//   Q, O             h·h each        Q column-parallel, O row-parallel: / t
//   K, V             h·kvd each      column-parallel, key/value heads split: / t
//   gate, up, down   h·f each        gate and up column-, down row-parallel: / t
// total    = 2h + 2h² + 2h·kvd + 3hf; per rank 2h + (2h² + 2h·kvd + 3hf)/t.
// llama3-8b (h 4096, kvd 8·128 = 1024, f 14336):
//   8,192 + 33,554,432 + 8,388,608 + 176,160,768 = 218,112,000; t 8: 27,271,168.
//
// Forward matmul FLOPs per rank:
//   linear    = 2bs·(h·h + 2h·kvd + h·h + 3h·f)/t     Q, K and V, O, gate/up/down
//   attention = 4b·s²·h/t                            every query head scores all s keys;
//                                                    grouped K/V share weights, not work
// Example h 8, a 2, k 1 (kvd 4), f 16, b 2, s 4, t 1:
//   linear 2·8·(64 + 64 + 64 + 384) = 9,216; attention 4·2·16·8 = 1,024.
//
// Stashed elements per token (times e·bs for bytes); no dropout in a Llama block:
//   replicated  N1 and N2 inputs 2h; QKV input (N1 output) h; MLP input (N2 output) h  = 4h
//   sharded     Q h/t, K kvd/t, V kvd/t (after RoPE, whose backward needs no input);
//               O input h/t; gate output, up output and down input 3f/t  = (2h+2kvd+3f)/t
//   attention   softmax output a·s/t, i.e. e·abs²/t bytes in all
// bytes = e·bs·(4h + (2h + 2kvd + 3f)/t) + e·abs²/t.
// Example h 8, kvd 4, f 16, a 2, b 2, s 4, bf16, t 1: 2·8·(32 + 72) + 2·2·2·16 = 1,792.
// Selective recompute drops the softmax term; full keeps only the block input, e·bsh.
//
// Tensor parallel as the GPT block: 2 forward all-reduces (after O and Down) and 2 backward
// (the gradients of the QKV and gate/up inputs), each of the e·bsh activation.
//
// MLP block: y = x + FC2(GELU(FC1(x))), biases, no norm, no dropout.
//   params   FC1 h·f + f (column: / t), FC2 f·h + h (row: weight / t, bias replicated)
//            total 2hf + f + h; per rank h + (2hf + f)/t. Example h 8, f 32: 552; t 2: 280.
//   FLOPs    linear forward 2bs·2hf/t = 4bshf/t; no attention, so selective recompute
//            redoes nothing and full redoes the forward.
//   stash    FC1 input e·bsh (replicated) + GELU and FC2 inputs 2e·bsf/t; full recompute
//            keeps the FC1 input, which is the block input, e·bsh.
//   tp       1 forward all-reduce (after FC2), 1 backward (the FC1 input gradient), e·bsh.
//
// A block has `tp_regions` tensor-parallel regions: 2 for GPT and Llama (attention, MLP), 1 for
// MLP. Without sequence parallelism each issues one all-reduce of e·bsh each way. With it, each
// is entered by an all-gather and left by a reduce-scatter in forward; the input gradient
// gathers the output gradient and reduce-scatters the input's; the weight gradient gathers the
// sharded region input again: per region 1 all-gather + 1 reduce-scatter forward, 1 + 1 for the
// input gradient, 1 all-gather for the weight gradient, each of the whole e·bsh.
//
// Context parallelism over c ranks: s above is this rank's S/c tokens of each sequence of S,
// and the attention products score those s queries against all S keys ([s × S] scores), so
// every term above divides by c. The GPT and Llama blocks gather the keys and values of the
// whole sequences (LayerShapes::CpExchanged, not stashed): GPT 1 all-gather of its fused qkv,
// [b, S, 3h/t], Llama 2, of k and v, [b, S, kvd/t] each; the input gradient gathers them again
// and reduce-scatters their gradients (as many calls, the same sizes); the weight gradient none.
// Example llama3-8b (kvd 1024), b 1, S 8192, t 1, c 2, bf16: 2 calls of 2·8192·1024 = 16,777,216
// bytes. The MLP block has no attention and no cp collective.
LayerCost BlockCost(const LayerCostInputs& in, int tp_regions) {
  LayerCost cost;
  SetLayerParams(in, &cost);
  SetBlockFlops(in, &cost);
  cost.stashed_bytes = LayerStashBytes(in);
  cost.output_bytes = in.LocalActivationBytes();
  const int64_t act = in.ActivationBytes();
  if (in.SequenceParallel()) {
    cost.tp_fwd.all_gather = TpCallsOf(in, tp_regions, act);
    cost.tp_fwd.reduce_scatter = TpCallsOf(in, tp_regions, act);
    cost.tp_bwd.all_gather = TpCallsOf(in, tp_regions, act);
    cost.tp_bwd.reduce_scatter = TpCallsOf(in, tp_regions, act);
    cost.tp_wgrad.all_gather = TpCallsOf(in, tp_regions, act);
  } else {
    cost.tp_fwd.all_reduce = TpCallsOf(in, tp_regions, act);
    cost.tp_bwd.all_reduce = TpCallsOf(in, tp_regions, act);
  }
  const std::vector<int64_t> widths = in.shapes.CpExchanged();
  int64_t exchanged = 0;
  for (int64_t width : widths)
    exchanged += in.e * in.tokens.batch * in.shapes.Keys(in.tokens).seq * width;
  const int calls = static_cast<int>(widths.size());
  cost.cp_fwd.all_gather = CpCallsOf(in, calls, exchanged / std::max(calls, 1));
  cost.cp_bwd.all_gather = cost.cp_fwd.all_gather;
  cost.cp_bwd.reduce_scatter = cost.cp_fwd.all_gather;
  return cost;
}

}  // namespace trident
