// Rotary position embedding and grouped-query attention for the Llama block, on Compute ops.
// Legend as in layer.h, plus K = kv_heads, Kl = K / tp, KVl = Kl·D.
//
// RoPE (the rotate-half convention of Hugging Face Llama): for a head vector x of size D at
// position p, with θ_j = p · theta^(−2j/D) for j < D/2,
//   y_j = x_j·cos θ_j − x_{j+D/2}·sin θ_j,   y_{j+D/2} = x_{j+D/2}·cos θ_j + x_j·sin θ_j,
// written y = x ⊙ C + (x·R) ⊙ Sn, where R is the fixed D×D signed permutation
// (R[j+D/2, j] = −1, R[j, j+D/2] = 1) and C, Sn hold cos θ and sin θ in both halves. Its
// backward is dx = dy ⊙ C + (dy ⊙ Sn)·Rᵀ. R is applied as a GEMM on the [N·heads, D] view.
//
// GQA: query head i reads key/value head i / G, G = Al / Kl query heads per kv head. Scores and
// contexts are one strided-batched GEMM per (sequence, kv head) over its G query heads, the kv
// operand with stride 0; the key/value gradients sum over the group (beta = 1, one head at a time).
#pragma once

#include <vector>

#include "runtime/layers/layer_ops.h"

namespace trident {

// One micro-batch's attention on this rank: sizes from the block's LayerShapes
// (models/layer_shapes.h), B and S from the input. Under context parallelism the queries are
// this rank's S tokens and the keys and values the whole sequence's (CpGather).
struct GqaShape {
  int64_t b = 0, s = 0, al = 0, kl = 0, d = 0;  // B, S (local queries), Al, Kl, D
  int64_t group = 0;                            // G = Al / Kl
  int64_t hl = 0;                               // Hl = Al·D
  int64_t kvl = 0;                              // KVl = Kl·D
  int64_t keys = 0;                             // keys per sequence: S·cp
  std::vector<QueryChunk> chunks;               // the query rows' causal blocks
};

// cos and sin tables of shape dims_BSND = [B, S, heads, D] for the sequence positions
// `positions` (S of them) of each sequence, in the activations' element type `type`.
struct RopeTables {
  Tensor cos_BSND;
  Tensor sin_BSND;
};
RopeTables MakeRopeTables(Compute& compute, const std::vector<int64_t>& dims_BSND,
                          const std::vector<int64_t>& positions, double theta, ElementType type);
// The rotate-half matrix R [D, D] of element type `type` (its entries are 0 and ±1, exact in any).
Tensor MakeRotateHalf(Compute& compute, int64_t d, ElementType type);
// x = RoPE(x) in place, x [B, S, heads·D] matching the tables.
void RopeForward(Compute& compute, const RopeTables& tables, const Tensor& rotate_DD, Tensor& x);
// dx = RoPE'ᵀ(dy) in place.
void RopeBackward(Compute& compute, const RopeTables& tables, const Tensor& rotate_DD, Tensor& dy);

// probs_BAlSS (chunk-major, LayerShapes::Scores) = causal-softmax(Q·Kᵀ/√D) per head.
void GqaProbs(Compute& compute, const GqaShape& g, const Tensor& q_BSHl, const Tensor& k_BSKVl,
              Tensor& probs_BAlSS);
// ctx_BSHl = P·V per head.
void GqaContext(Compute& compute, const GqaShape& g, const Tensor& probs_BAlSS,
                const Tensor& v_BSKVl, Tensor& ctx_BSHl);
// From dctx: dq (w.r.t. the rotated q), dk (rotated k) and dv, the latter two for the whole
// sequences. dq, dk, dv must be zero.
struct GqaInputs {
  const Tensor* q_BSHl;
  const Tensor* k_BSKVl;
  const Tensor* v_BSKVl;
  const Tensor* probs_BAlSS;
};
void GqaBackward(Compute& compute, const GqaShape& g, const GqaInputs& in, const Tensor& dctx_BSHl,
                 Tensor& dq_BSHl, Tensor& dk_BSKVl, Tensor& dv_BSKVl);

}  // namespace trident
