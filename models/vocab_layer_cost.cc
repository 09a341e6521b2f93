// Costs of the layers around the blocks: embedding, final norm and LM head, summed over their
// shapes (models/layer_shapes.h). Symbols: b micro-batch, s sequence length, h hidden,
// V vocabulary, t tp degree, e bytes per element, Vt = ceil(V/t) vocabulary rows of tp rank 0
// (Megatron pads the vocabulary to a multiple of t, and of 128, so that every rank holds the
// same rows; we pad only to t. Example: V 50257, t 4 -> 12565 rows, 4 · 12565 = 50260 >= V).
// Under context parallelism s is this cp rank's tokens of each sequence (S/c); these layers
// issue no cp collective (the head's loss average over the cp group is one scalar, left out).
#include <cstdint>

#include "models/layer_cost_internal.h"

namespace trident {

namespace {

constexpr int64_t kFp32Bytes = 4;  // the loss and cross-entropy statistics are fp32

}  // namespace

// Token (+ learned position) embedding, vocabulary-parallel.
//   params   token table V·h, Vt·h per rank; position table max_seq_len·h when positions
//            are learned, replicated. Owns the shared matrix of a tied model.
//            gpt2-small: 50,257·768 + 1,024·768 = 39,383,808; t 4: 12,565·768 + 786,432.
//   FLOPs    0: a gather forward, a scatter-add backward; no matmul.
//   stash    the token ids, 4·b·s bytes, which the weight gradient scatter-adds by.
//   tp       each rank looks up the ids in its row range (zeros elsewhere); 1 forward
//            all-reduce of e·bsh sums them. The output gradient is already whole on every
//            rank, so backward needs none. Sequence parallel: a reduce-scatter instead,
//            handing on e·bsh/t, and the weight gradient gathers the output gradient (1
//            all-gather of e·bsh, in W).
LayerCost EmbeddingCost(const LayerCostInputs& in) {
  LayerCost cost;
  SetLayerParams(in, &cost);
  cost.stashed_bytes = LayerStashBytes(in);
  cost.output_bytes = in.LocalActivationBytes();
  const int64_t act = in.ActivationBytes();
  if (in.SequenceParallel()) {
    cost.tp_fwd.reduce_scatter = TpCallsOf(in, 1, act);
    cost.tp_wgrad.all_gather = TpCallsOf(in, 1, act);
  } else {
    cost.tp_fwd.all_reduce = TpCallsOf(in, 1, act);
  }
  return cost;
}

// Final LayerNorm (weight + bias, 2h) or RMSNorm (weight, h), replicated on every rank.
// No matmul FLOPs; stashes its input e·bsh; hands on e·bsh; no tp collective. Sequence
// parallel: e·bsh/t each.
LayerCost FinalNormCost(const LayerCostInputs& in) {
  LayerCost cost;
  SetLayerParams(in, &cost);
  cost.stashed_bytes = LayerStashBytes(in);
  cost.output_bytes = in.LocalActivationBytes();
  return cost;
}

// Projection to the vocabulary (weight V×h, vocabulary-parallel) and mean cross-entropy.
//   params   V·h, Vt·h per rank. A tied head owns nothing: the embedding holds and counts the
//            shared matrix (0 params, total_params and param_bytes here). A pipeline stage
//            that holds a tied head on another stage than the embedding keeps a copy of
//            it; the memory model adds that copy, not this function.
//   FLOPs    forward 2bshV/t, input gradient 2bshV/t, weight gradient 2bshV/t (tied or
//            not: the shared matrix still gets this gradient). These use V/t, not the padded
//            Vt, so FLOPs summed over the group equal the model's (padding is not useful
//            work). Example gpt2-small, b 1, s 1024: 2·1024·768·50,257 = 79.0 GFLOP each.
//   stash    the input e·bsh (weight gradient) and the logits e·b·s·Vt (softmax gradient).
//   output   the loss, 4 bytes.
//   tp       vocabulary-parallel cross-entropy all-reduces 3 fp32 statistics per token
//            forward (max logit, sum of exponentials, target logit), each 4·b·s bytes; the
//            input gradient is a sum over vocabulary shards, 1 backward all-reduce of e·bsh.
//            Sequence parallel: the input (e·bsh/t in the stash) is gathered forward and
//            again for the weight gradient (2 all-gathers of e·bsh), and the input gradient
//            reduce-scattered instead of all-reduced.
//   recompute  no mode changes the head: recomputation covers the blocks, and the head's
//            stash is its input and logits whatever the mode.
LayerCost LmHeadCost(const LayerCostInputs& in) {
  LayerCost cost;
  SetLayerParams(in, &cost);
  const int64_t tokens = in.tokens.Tokens();
  double flops = 2.0 * static_cast<double>(tokens) *
                 static_cast<double>(in.shapes.hidden * in.shapes.vocab) /
                 static_cast<double>(in.Tp());
  cost.fwd_flops = flops;
  cost.bwd_input_flops = flops;
  cost.bwd_weight_flops = flops;
  cost.stashed_bytes = LayerStashBytes(in);
  cost.output_bytes = kFp32Bytes;
  cost.tp_fwd.all_reduce = TpCallsOf(in, 3, kFp32Bytes * tokens);
  if (in.SequenceParallel()) {
    cost.tp_fwd.all_gather = TpCallsOf(in, 1, in.ActivationBytes());
    cost.tp_bwd.reduce_scatter = TpCallsOf(in, 1, in.ActivationBytes());
    cost.tp_wgrad.all_gather = TpCallsOf(in, 1, in.ActivationBytes());
  } else {
    cost.tp_bwd.all_reduce = TpCallsOf(in, 1, in.ActivationBytes());
  }
  return cost;
}

}  // namespace trident
