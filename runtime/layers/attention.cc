// Causal multi-head self-attention on this rank's Al heads. Legend in layer.h.
//   qkv = in·Wqkvᵀ + bqkv, [B, S, Al, 3, D]     (column-parallel)
//   per sequence b and head i (one strided-batched GEMM over the heads, no permutes):
//     P_i = causal-softmax(Q_i·K_iᵀ / √D)        [S, S]
//     C_i = P_i·V_i                              [S, D], written at columns i·D of ctx_BSHl
//   out = reduce(ctx·Wprojᵀ) + bproj              (row-parallel)
// Backward: dout' = gather(dout); dC = dout'·Wproj; dP_i = dC_i·V_iᵀ; dV_i = P_iᵀ·dC_i;
//   dS = softmax'(dP); dQ_i = dS_i·K_i / √D; dK_i = dS_iᵀ·Q_i / √D; din = reduce(dqkv·Wqkv).
// qkv's input is gather(in); gather and reduce as in ffn.cc.
// Context parallelism: S above is this rank's S/cp tokens, and K and V come from qkv of the
// whole sequence (CpGather, again in backward); each of the rank's two query chunks is one
// block of score rows, masked by its sequence positions; dK and dV are computed for the
// whole sequence and reduce-scattered back to their ranks (CpReduce).
#include <cmath>

#include "runtime/layers/block_parts.h"

namespace trident {

namespace {

// This rank's heads for one micro-batch: sizes from the block's shapes, B and S from the input.
struct Heads {
  int64_t b = 0, s = 0, al = 0, d = 0;  // B, S (local queries), Al, D
  int64_t keys = 0;                     // keys per sequence: S·cp
  int64_t hl = 0;                       // Hl: context width
  int64_t qkv = 0;                      // 3Hl: qkv width
  int64_t head_stride = 0;              // 3D: from one head's q to the next's, in qkv
  std::vector<QueryChunk> chunks;       // the query rows' causal blocks
};

// The whole micro-batch of the stashed input (this rank's share under sequence parallelism).
TokenBlock WholeTokens(const LayerShapes& shapes, const Tensor& in_BSH) {
  TRIDENT_CHECK(in_BSH.rank() == 3)
      << "attention input must be [B, S, H], got " << in_BSH.ToString();
  return shapes.Gathered(TokensOf(in_BSH));
}

Heads HeadsOf(const LayerContext& context, const LayerShapes& shapes, const Tensor& in_BSH) {
  const TokenBlock tb = WholeTokens(shapes, in_BSH);
  return {tb.batch,
          tb.seq,
          shapes.heads,
          shapes.head_dim,
          shapes.Keys(tb).seq,
          shapes.q_width,
          shapes.qkv_width,
          shapes.qkv_head_stride,
          QueryChunks(context, tb.seq)};
}

// Q (which 0) of chunk k of sequence b, in the local qkv_BS3Hl.
MatrixLayout QueryLayout(const Heads& g, int64_t b, size_t k) {
  return {(b * g.s + g.chunks[k].first_row) * g.qkv, g.chunks[k].rows, g.d, g.qkv, g.head_stride};
}
// K (which 1) or V (2) of every head of sequence b, in the whole-sequence keys_BS3Hl.
MatrixLayout KeyLayout(const Heads& g, int64_t b, int which) {
  return {b * g.keys * g.qkv + which * g.d, g.keys, g.d, g.qkv, g.head_stride};
}
// The [rows, keys] score / probability blocks of chunk k of sequence b, in a chunk-major
// [chunks·B, Al, rows, keys] tensor (LayerShapes::Scores).
MatrixLayout ScoreLayout(const Heads& g, int64_t b, size_t k) {
  const int64_t rows = g.chunks[k].rows;
  return {(static_cast<int64_t>(k) * g.b + b) * g.al * rows * g.keys, rows, g.keys, g.keys,
          rows * g.keys};
}
// Head i's columns [i·D, (i+1)·D) of chunk k of sequence b, in ctx_BSHl.
MatrixLayout CtxLayout(const Heads& g, int64_t b, size_t k) {
  return {(b * g.s + g.chunks[k].first_row) * g.hl, g.chunks[k].rows, g.d, g.hl, g.d};
}

// c = alpha·op(a)·op(b) + beta·c per head.
void HeadGemm(Compute& compute, const Heads& g, bool trans_a, bool trans_b, float alpha,
              MatrixLayout a, MatrixLayout b, MatrixLayout c, const Tensor& ta, const Tensor& tb,
              Tensor& tc, float beta = 0.0f) {
  BatchedGemm gemm{g.al, trans_a, trans_b, alpha, beta, a, b, c};
  compute.GemmStridedBatched(gemm, ta, tb, tc);
}

float Scale(const Heads& g) { return 1.0f / std::sqrt(static_cast<float>(g.d)); }

// The whole-sequence qkv for the stashed one, gathered once per pass.
void GatherKeys(const LayerContext& context, AttentionStash& st) {
  if (!st.keys_BS3Hl.defined()) st.keys_BS3Hl = CpGather(context, st.qkv_BS3Hl);
}

void ComputeProbs(const LayerContext& context, const LayerShapes& shapes, const Heads& g,
                  AttentionStash& st) {
  Compute& compute = *context.compute;
  GatherKeys(context, st);
  st.probs_BAlSS =
      compute.Allocate(shapes.Scores(WholeTokens(shapes, st.in_BSH)), st.in_BSH.type());
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    for (int64_t b = 0; b < g.b; ++b) {
      HeadGemm(compute, g, false, true, Scale(g), QueryLayout(g, b, k), KeyLayout(g, b, 1),
               ScoreLayout(g, b, k), st.qkv_BS3Hl, st.keys_BS3Hl, st.probs_BAlSS);
    }
  }
  CausalSoftmax(compute, g.chunks, st.probs_BAlSS);
}

void ComputeContext(Compute& compute, const LayerShapes& shapes, const Heads& g,
                    AttentionStash& st) {
  st.ctx_BSHl = compute.Allocate(shapes.Query(WholeTokens(shapes, st.in_BSH)), st.in_BSH.type());
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    for (int64_t b = 0; b < g.b; ++b) {
      HeadGemm(compute, g, false, false, 1.0f, ScoreLayout(g, b, k), KeyLayout(g, b, 2),
               CtxLayout(g, b, k), st.probs_BAlSS, st.keys_BS3Hl, st.ctx_BSHl);
    }
  }
}

// dprobs = dP, and dV (summed over the query chunks) into dkeys, the whole sequences' qkv
// gradient.
void ContextBackward(Compute& compute, const Heads& g, AttentionStash& st, const Tensor& dctx,
                     Tensor& dprobs, Tensor& dkeys) {
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    const float beta = k == 0 ? 0.0f : 1.0f;
    for (int64_t b = 0; b < g.b; ++b) {
      HeadGemm(compute, g, false, true, 1.0f, CtxLayout(g, b, k), KeyLayout(g, b, 2),
               ScoreLayout(g, b, k), dctx, st.keys_BS3Hl, dprobs);
      HeadGemm(compute, g, true, false, 1.0f, ScoreLayout(g, b, k), CtxLayout(g, b, k),
               KeyLayout(g, b, 2), st.probs_BAlSS, dctx, dkeys, beta);
    }
  }
}

// dK (summed over the query chunks) into dkeys from the score gradient dscores.
void KeyBackward(Compute& compute, const Heads& g, AttentionStash& st, const Tensor& dscores,
                 Tensor& dkeys) {
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    const float beta = k == 0 ? 0.0f : 1.0f;
    for (int64_t b = 0; b < g.b; ++b) {
      HeadGemm(compute, g, true, false, Scale(g), ScoreLayout(g, b, k), QueryLayout(g, b, k),
               KeyLayout(g, b, 1), dscores, st.qkv_BS3Hl, dkeys, beta);
    }
  }
}

// dQ into the local dqkv from the score gradient dscores.
void QueryBackward(Compute& compute, const Heads& g, AttentionStash& st, const Tensor& dscores,
                   Tensor& dqkv) {
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    for (int64_t b = 0; b < g.b; ++b) {
      HeadGemm(compute, g, false, false, Scale(g), ScoreLayout(g, b, k), KeyLayout(g, b, 1),
               QueryLayout(g, b, k), dscores, st.keys_BS3Hl, dqkv);
    }
  }
}

}  // namespace

AttentionParams MakeAttentionParams(const LayerContext& context, const LayerShapes& shapes,
                                    const std::string& prefix) {
  AttentionParams p;
  p.qkv_weight = MakeParameter(context, shapes.Param(prefix + "qkv.weight"), WeightInit());
  p.qkv_bias = MakeParameter(context, shapes.Param(prefix + "qkv.bias"), InitKind::Zeros());
  p.proj_weight = MakeParameter(context, shapes.Param(prefix + "proj.weight"), WeightInit());
  p.proj_bias = MakeParameter(context, shapes.Param(prefix + "proj.bias"), InitKind::Zeros());
  return p;
}

void AppendAttentionParams(AttentionParams& p, std::vector<Parameter>& out) {
  for (OwnedParameter* q : {&p.qkv_weight, &p.qkv_bias, &p.proj_weight, &p.proj_bias}) {
    out.push_back(q->Ref());
  }
}

void AttentionRecompute(const LayerContext& context, const LayerShapes& shapes, AttentionParams& p,
                        AttentionStash& stash) {
  Compute& compute = *context.compute;
  const Heads g = HeadsOf(context, shapes, stash.in_BSH);
  const bool full = !stash.qkv_BS3Hl.defined();
  if (full) {
    const Tensor in_BSH = TpGatherKept(context, stash.in_BSH);
    stash.qkv_BS3Hl = compute.Allocate(shapes.Qkv(TokensOf(in_BSH)), in_BSH.type());
    LinearForward(compute, in_BSH, p.qkv_weight.value, &p.qkv_bias.value, stash.qkv_BS3Hl);
  }
  if (!stash.probs_BAlSS.defined()) ComputeProbs(context, shapes, g, stash);
  if (full) ComputeContext(compute, shapes, g, stash);
}

Tensor AttentionForward(const LayerContext& context, const LayerShapes& shapes, AttentionParams& p,
                        Tensor in_BSH, AttentionStash& stash) {
  stash.in_BSH = std::move(in_BSH);
  AttentionRecompute(context, shapes, p, stash);
  Tensor partial_BSH =
      context.compute->Allocate(shapes.Hidden(TokensOf(stash.ctx_BSHl)), stash.ctx_BSHl.type());
  LinearForward(*context.compute, stash.ctx_BSHl, p.proj_weight.value, nullptr, partial_BSH);
  Tensor out_BSH = TpReduce(context, std::move(partial_BSH));
  context.compute->AddBias(p.proj_bias.value, out_BSH);
  return out_BSH;
}

Tensor AttentionBackwardInput(const LayerContext& context, const LayerShapes& shapes,
                              AttentionParams& p, AttentionStash& stash, Tensor dout_local) {
  Compute& compute = *context.compute;
  const Heads g = HeadsOf(context, shapes, stash.in_BSH);
  GatherKeys(context, stash);
  Tensor dout_BSH = TpGather(context, std::move(dout_local));
  Tensor dctx_BSHl = compute.Allocate(stash.ctx_BSHl.shape(), stash.ctx_BSHl.type());
  LinearBackwardInput(compute, dout_BSH, p.proj_weight.value, dctx_BSHl);
  // dK and dV of the whole sequences; with cp 1 that is dqkv itself (dQ fills the rest).
  Tensor dkeys_BS3Hl = compute.Allocate(stash.keys_BS3Hl.shape(), stash.keys_BS3Hl.type());
  Tensor dscores_BAlSS = compute.Allocate(stash.probs_BAlSS.shape(), stash.probs_BAlSS.type());
  ContextBackward(compute, g, stash, dctx_BSHl, dscores_BAlSS, dkeys_BS3Hl);
  compute.SoftmaxBackward(stash.probs_BAlSS, dscores_BAlSS, dscores_BAlSS);
  KeyBackward(compute, g, stash, dscores_BAlSS, dkeys_BS3Hl);
  Tensor dqkv_BS3Hl = CpReduce(context, std::move(dkeys_BS3Hl));
  QueryBackward(compute, g, stash, dscores_BAlSS, dqkv_BS3Hl);
  stash.probs_BAlSS = Tensor();
  stash.keys_BS3Hl = Tensor();
  stash.qkv_BS3Hl = Tensor();
  Tensor din_BSH = compute.Allocate(dout_BSH.shape(), dout_BSH.type());
  LinearBackwardInput(compute, dqkv_BS3Hl, p.qkv_weight.value, din_BSH);
  stash.dqkv_BS3Hl = std::move(dqkv_BS3Hl);
  stash.dout_BSH = std::move(dout_BSH);
  return TpReduce(context, std::move(din_BSH));
}

void AttentionBackwardWeight(const LayerContext& context, AttentionParams& p,
                             AttentionStash& stash) {
  Compute& compute = *context.compute;
  LinearBackwardWeight(compute, stash.ctx_BSHl, stash.dout_BSH, p.proj_weight.grad,
                       &p.proj_bias.grad);
  LinearBackwardWeight(compute, TpGatherKept(context, stash.in_BSH), stash.dqkv_BS3Hl,
                       p.qkv_weight.grad, &p.qkv_bias.grad);
  stash = AttentionStash();
}

}  // namespace trident
