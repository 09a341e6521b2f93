// Analytic costs of one layer: FLOPs, parameters, activation and stash bytes, and the
// tensor-parallel communication it issues, for one micro-batch on one rank of a tp group.
//
// Conventions (shared with the planner's cost model and checked against the profiler):
//  - FLOPs count matrix multiplies only, 2 per multiply-add, with the full s×s attention
//    matrix (no causal halving): the convention of the published GPT formula
//    72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)). Norms, softmax and activations are memory-bound
//    and are costed by bytes elsewhere.
//  - Backward is split as the zero-bubble schedules need it: input-gradient (dX) and
//    weight-gradient (dW). A linear layer's dX and dW each cost what its forward costs;
//    the attention score and context products have no weights, so both land in dX.
//  - Stashed bytes follow Korthikanti et al., "Reducing Activation Recomputation in Large
//    Transformer Models" (2022), Table 2, generalised from 2-byte to any dtype and with the
//    1-byte dropout masks present only when dropout > 0.
//  - Tensor parallelism is Megatron's: column-parallel QKV / FC1 / gate-up, row-parallel
//    projection / FC2 / down, heads split over the group, vocabulary-parallel embedding and
//    LM head. Per-rank figures divide the sharded parts by tp and keep replicated parts whole.
//    Vocabulary-parallel tables hold ceil(V/tp) rows per rank (Megatron pads the vocabulary);
//    FLOPs use V/tp, so FLOPs summed over the tp group always equal the tp = 1 figure.
//  - With tp = 1 there is no tp group: the collective counts and payloads are 0.
//  - Sequence parallelism (LayerShape::sequence_parallel, models/layer_shapes.h) divides the
//    residual-stream terms of the stash and the output by t, and turns each tp all-reduce of an
//    activation into an all-gather entering a tp region and a reduce-scatter leaving it; the
//    weight gradients gather the sharded inputs they need again.
//  - Context parallelism (LayerShape::cp = c > 1, Megatron's with Llama 3's all-gather
//    exchange, Dubey et al. 2024 §3.3.2) gives every layer this rank's s/c tokens of each
//    sequence, so every token-linear figure (linear FLOPs, stash, output, tp payloads) divides
//    by c; the attention scores [s/c, s] divide by c too. Attention all-gathers the whole
//    sequences' keys and values over the cp group in forward (LayerShapes::CpExchanged: GPT's
//    fused qkv, Llama's k and v; not stashed) and again in the input gradient, which also
//    reduce-scatters their gradients. Parameters are not divided by c. The LM
//    head's loss average over the cp group (one scalar all-reduce) is left out.
//  - Tied embeddings: the embedding owns and counts the shared matrix; the LM head of a tied
//    model reports 0 params and total_params (its FLOPs are unchanged).
//  - A generic layer (core/model_spec.h) has no shapes: every figure is 0. Its costs exist only
//    in its profile, so analytic profiles refuse it (profiler/analytic_profile.h) and the
//    model FLOPs behind "% of peak" leave it out.
//  - Recompute changes the blocks only (GPT, Llama, MLP); the embedding, final norm and LM
//    head cost the same under every mode.
//
// Every figure is a sum over the layer's shapes (models/layer_shapes.h). Per-family
// derivations, with worked examples, are next to the code: models/block_cost.cc (GPT, Llama
// and MLP blocks) and models/vocab_layer_cost.cc (embedding, final norm, LM head).
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/model_spec.h"
#include "core/recompute.h"

namespace trident {

// The shape of one micro-batch on one rank.
struct LayerShape {
  int64_t micro_batch = 1;  // b: sequences per micro-batch
  int64_t seq_len = 1;      // s: tokens per sequence
  int tp = 1;               // t: tensor-parallel degree
  DType dtype = DType::kFp32;
  RecomputeMode recompute = RecomputeMode::kNone;
  bool sequence_parallel = false;  // REQUIRES: tp > 1 and tp divides seq_len / cp when set
  int cp = 1;                      // c: context-parallel degree; REQUIRES: 2·cp divides seq_len
};

// Calls of one collective in one group (tp or cp): how many, and their payloads summed (each
// call's payload is its whole buffer: the gathered tensor of an all-gather, the input of a
// reduce-scatter).
struct GroupCalls {
  int count = 0;
  int64_t bytes = 0;
  bool operator==(const GroupCalls&) const = default;
};

// The collectives of one pass (forward, input gradient or weight gradient) in one group.
struct GroupTraffic {
  GroupCalls all_reduce, all_gather, reduce_scatter;
  bool operator==(const GroupTraffic&) const = default;
};

struct LayerCost {
  double fwd_flops = 0;         // forward, this rank
  double bwd_input_flops = 0;   // input gradient (B), this rank
  double bwd_weight_flops = 0;  // weight gradient (W), this rank
  double recompute_flops = 0;   // forward work redone before backward for `recompute`
  int64_t params = 0;           // parameters held by this rank
  int64_t total_params = 0;     // parameters of the whole layer (all tp ranks, once)
  int64_t param_bytes = 0;      // params · dtype bytes
  int64_t output_bytes = 0;     // activation handed to the next layer, per micro-batch
  int64_t stashed_bytes = 0;    // kept from forward to backward, for `recompute`
  GroupTraffic tp_fwd;          // the forward's collectives in the tp group
  GroupTraffic tp_bwd;          // the input gradient's (B)
  GroupTraffic tp_wgrad;        // the weight gradient's (W): re-gathered inputs
  GroupTraffic cp_fwd;          // the forward's collectives in the cp group
  GroupTraffic cp_bwd;          // the input gradient's (B); W issues none over cp

  double TotalFlops() const {
    return fwd_flops + bwd_input_flops + bwd_weight_flops + recompute_flops;
  }
  bool operator==(const LayerCost&) const = default;
};

// The cost of one layer of `kind` in `model` for `shape`.
// REQUIRES: model.Validate() is ok; shape.tp divides the sharded dimensions (heads,
// kv_heads, ffn_hidden) — callers check this with ModelSpec::TensorParallelProblem first; tp,
// micro_batch and seq_len >= 1. A violation is a bug and aborts through TRIDENT_CHECK.
LayerCost AnalyticLayerCost(const ModelSpec& model, LayerKind kind, const LayerShape& shape);

}  // namespace trident
