// The two halves of a transformer block, shared by the GPT and MLP blocks, without norms or
// residuals: the GELU MLP fc2(gelu(fc1(in))) and causal multi-head self-attention
// proj(attention(qkv(in))). Each runs on this rank's share of the tp group, takes and returns
// the residual stream's tensors — whole (all-reduced), or under sequence parallelism this
// rank's [B, S/t, H] (gathered on entry, reduce-scattered on exit: TpGather, TpReduce in
// layer_ops.h) — and so do their input gradients. Every parameter and activation takes its
// shape from the block's LayerShapes (models/layer_shapes.h). Legend as in layer.h; in/out are
// [B, S, H] or [B, S/t, H].
//
// QKV layout: the full weight [3H, H] stores its rows head by head, [A, 3, D] (Megatron's
// layout): the rows of head i are its D query rows, then D key rows, then D value rows. A row
// split over tp then hands rank r whole heads [r·A/tp, (r+1)·A/tp), independently of tp, so
// InitValues gives the same full tensor under any tp. (Importing a Hugging Face GPT-2 c_attn,
// laid out [3, A, D], needs this row permutation.) The bias [3H] follows the same layout.
#pragma once

#include "models/layer_shapes.h"
#include "runtime/layers/layer_ops.h"

namespace trident {

struct FfnParams {
  OwnedParameter fc1_weight;  // [F, H], column-parallel: [Fl, H]
  OwnedParameter fc1_bias;    // [F] -> [Fl]
  OwnedParameter fc2_weight;  // [H, F], row-parallel: [H, Fl]
  OwnedParameter fc2_bias;    // [H], whole on every rank (added after the all-reduce)
};

struct FfnStash {
  Tensor in_BSH;    // fc1 input
  Tensor h_BSFl;    // fc1 output (GELU input); dropped by BackwardInput
  Tensor act_BSFl;  // GELU output (fc2 input)
  Tensor dh_BSFl;   // gradient at the fc1 output, kept for fc1's weight gradient
  Tensor dout_BSH;  // gradient at the fc2 output, kept for fc2's weight gradient
  int64_t Bytes() const { return SumBytes({&in_BSH, &h_BSFl, &act_BSFl, &dh_BSFl, &dout_BSH}); }
};

// The parameters `prefix` + "fc1.weight", ... of `shapes`.
FfnParams MakeFfnParams(const LayerContext& context, const LayerShapes& shapes,
                        const std::string& prefix);
void AppendFfnParams(FfnParams& p, std::vector<Parameter>& out);
// Fills h and act from stash.in_BSH (the part full recompute drops).
void FfnRecompute(const LayerContext& context, const LayerShapes& shapes, FfnParams& p,
                  FfnStash& stash);
// Returns fc2(gelu(fc1(in))) + fc2 bias; stashes in, h and act.
Tensor FfnForward(const LayerContext& context, const LayerShapes& shapes, FfnParams& p,
                  Tensor in_BSH, FfnStash& stash);
// Returns d(in) (reduced over tp: TpReduce). REQUIRES: h and act present (recompute first).
Tensor FfnBackwardInput(const LayerContext& context, FfnParams& p, FfnStash& stash,
                        Tensor dout_BSH);
void FfnBackwardWeight(const LayerContext& context, FfnParams& p, FfnStash& stash);

struct AttentionParams {
  OwnedParameter qkv_weight;   // [3H, H] in [A, 3, D] row order, column-parallel: [3Hl, H]
  OwnedParameter qkv_bias;     // [3H] -> [3Hl]
  OwnedParameter proj_weight;  // [H, H], row-parallel: [H, Hl]
  OwnedParameter proj_bias;    // [H], whole
};

struct AttentionStash {
  Tensor in_BSH;       // qkv input
  Tensor qkv_BS3Hl;    // [B, S, Al, 3, D]
  Tensor probs_BAlSS;  // softmax output; dropped by selective recompute
  Tensor ctx_BSHl;     // attention context (proj input)
  Tensor dqkv_BS3Hl;   // gradient at the qkv output, kept for qkv's weight gradient
  Tensor dout_BSH;     // gradient at the proj output, kept for proj's weight gradient
  // qkv of the whole sequences (CpGather; a view of qkv for cp 1), whose keys and values the
  // local queries attend to: held during Forward (the block drops it after) and BackwardInput
  // only, so a full recompute's rerun forward and the backward share one gather. Not stash.
  Tensor keys_BS3Hl;
  int64_t Bytes() const {
    return SumBytes({&in_BSH, &qkv_BS3Hl, &probs_BAlSS, &ctx_BSHl, &dqkv_BS3Hl, &dout_BSH});
  }
};

// The parameters `prefix` + "qkv.weight", ... of `shapes`.
AttentionParams MakeAttentionParams(const LayerContext& context, const LayerShapes& shapes,
                                    const std::string& prefix);
void AppendAttentionParams(AttentionParams& p, std::vector<Parameter>& out);
// Fills probs from qkv (selective recompute), or qkv, probs and ctx from in (full); gathers
// keys_BS3Hl when it is not held.
void AttentionRecompute(const LayerContext& context, const LayerShapes& shapes, AttentionParams& p,
                        AttentionStash& stash);
Tensor AttentionForward(const LayerContext& context, const LayerShapes& shapes, AttentionParams& p,
                        Tensor in_BSH, AttentionStash& stash);
Tensor AttentionBackwardInput(const LayerContext& context, const LayerShapes& shapes,
                              AttentionParams& p, AttentionStash& stash, Tensor dout_BSH);
void AttentionBackwardWeight(const LayerContext& context, AttentionParams& p,
                             AttentionStash& stash);

}  // namespace trident
