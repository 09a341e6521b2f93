// Layer: one layer of a model on one rank of its tensor-parallel (tp) group, with forward and a
// backward split in two, as zero-bubble pipeline schedules need it.
//
// Shape legend (suffixes of tensor names):
//   B  micro-batch (sequences)         S  sequence length (tokens per sequence)
//   H  hidden                          F  ffn hidden (MLP inner width)
//   V  vocabulary                      A  attention heads, D = H / A head size
//   K  key/value heads (GQA), KV = K·D
//   N  tokens B·S, when a tensor is seen as a matrix [N, C]
// A trailing "l" means this rank's share under tp (Hl = H / tp, Fl = F / tp, Al = A / tp,
// Vl = this rank's vocabulary rows, at most ceil(V / tp)); shapes without it are whole on every
// rank. Every such size is a field of the layer's LayerShapes (models/layer_shapes.h).
//
// Per kind (LayerKind of core/model_spec.h), what Forward takes and returns:
//   embedding    ids_BS int32              -> x_BSH     (token + learned positions)
//   gpt_block    x_BSH                     -> y_BSH     (pre-LN, causal MHA, GELU MLP)
//   llama_block  x_BSH                     -> y_BSH     (RMSNorm, GQA with RoPE, SwiGLU)
//   mlp_block    x_BSH                     -> y_BSH     (x + fc2(gelu(fc1(x))))
//   final_norm   x_BSH                     -> y_BSH     (LayerNorm or RMSNorm per the model)
//   lm_head      x_BSH (+ targets_BS)      -> loss_1    (mean cross-entropy over B·S tokens)
// BackwardInput takes the gradient of Forward's output (for the LM head: loss_1 holding
// dloss, 1 for a lone loss or 1 / micro-batches for a step's mean) and returns the gradient of
// its input (an undefined Tensor for the embedding, whose input is ids).
//
// The three calls for one micro-batch m, in this order:
//   Forward(m, x)        computes the output, keeps a stash for m (StashBytes(m)).
//   BackwardInput(m, dy) returns dx; keeps what the weight gradient needs (for a linear,
//                        its input and output gradient) and frees the rest it can.
//   BackwardWeight(m)    dW += ... for every parameter, then frees m's stash.
// Several micro-batches may be in flight (1F1B, interleaved, zero-bubble); weight gradients
// accumulate across them until the caller zeroes the grads (after the optimizer step).
// Norm weights get their gradient during BackwardInput: the fused norm backward of Compute
// yields dx and dgamma together, and both are cheap vector work.
// The caller may release a parameter's value and gradient tensors between these calls (they
// are then undefined) and set them again before a call that needs them: values before Forward
// and BackwardInput, gradients before BackwardInput and BackwardWeight (runtime/train/
// grad_sync.h, sharded data parallelism). So a layer reads values in no other call, and never
// tells what it holds by whether a tensor is defined.
//
// Tensor parallelism (Megatron-LM): QKV and FC1 are column-parallel (weight rows split),
// attention projection and FC2 row-parallel (weight columns split) with an all-reduce of the
// output in forward; the input gradient of a column-parallel layer is all-reduced in backward.
// With sequence parallelism (LayerContext::sequence_parallel) those all-reduces become
// reduce-scatters along the sequence, and each tp region gathers its input (runtime/layers/
// README.md).
// Heads (and kv heads) are split over the group; the embedding and the LM head are
// vocabulary-parallel (rows of the [V, H] tables, Megatron's padded split). Every rank of the tp
// group calls the same methods in the same order (the all-reduces are collectives). A failed
// collective aborts (TRIDENT_CHECK): it happens inside a running step, where peers must not be left
// waiting.
//
// Initialization: every parameter comes from InitValues(seed, layer_index, name, ...) of
// runtime/checkpoint/init_values.h, evaluated on this rank's slice of the full tensor, so any
// tp gives the same full weights. GPT-2 style: weights normal(0, 0.02), biases 0, norm
// weights 1 and norm biases 0. (GPT-2's extra 1/sqrt(2L) scaling of residual projections is
// not applied: a layer does not know L; the runtime may rescale after construction.)
//
// Tied embeddings: the embedding owns the token table [V, H] (split by vocabulary rows); a tied
// LM head is built with LayerContext::tied_weight / tied_weight_grad pointing at the
// embedding's table and its gradient on the same rank (same stage), reports no parameters of
// its own and accumulates its weight gradient into the embedding's. A tied head on another
// pipeline stage keeps a copy and all-reduces the gradient with the embedding's stage; that is
// the runtime's job.
//
// Thread-safety: one thread at a time per Layer (the Compute and Comm it uses are such).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/recompute.h"
#include "runtime/checkpoint/host_tensor.h"
#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/compute/tensor.h"

namespace trident {

struct LayerContext {
  Compute* compute = nullptr;  // REQUIRES: not null; outlives the layer
  Comm* tp_comm = nullptr;     // the tp group; nullptr for tp 1
  int tp_rank = 0;             // == tp_comm->Rank() when tp_comm is set
  int tp_size = 1;             // == tp_comm->Size() when tp_comm is set
  uint64_t seed = 0;           // the model's initialization seed
  int layer_index = 0;         // index in ModelSpec::ExpandLayers(); keys the initializer
  RecomputeMode recompute = RecomputeMode::kNone;
  // Megatron's sequence parallelism (models/layer_shapes.h): the residual stream between layers
  // is this rank's [B, S/t, H]. REQUIRES: tp_size > 1 and t divides S when set.
  bool sequence_parallel = false;
  // Context parallelism (models/layer_shapes.h): every sequence is cut into 2·cp_size chunks
  // and this rank holds chunks cp_rank and 2·cp_size − 1 − cp_rank, so layers see [B, S/cp, ..]
  // tensors; attention gathers keys and values over cp_comm, and the LM head's loss is the
  // mean over the group. cp_comm is nullptr for cp 1.
  Comm* cp_comm = nullptr;
  int cp_rank = 0;  // == cp_comm->Rank() when cp_comm is set
  int cp_size = 1;  // == cp_comm->Size() when cp_comm is set
  // Tied LM head only: the embedding's token table [Vl, H] and its gradient (see above).
  Tensor* tied_weight = nullptr;
  Tensor* tied_weight_grad = nullptr;
  // The element type of parameter values and activations: fp32, or bf16 for mixed precision
  // (values rounded from the fp32 initialization; gradients are fp32 whatever it is, and the
  // optimizer keeps fp32 master weights: runtime/train/optimizer.h).
  ElementType dtype = ElementType::kFp32;
};

// One parameter as this rank holds it.
struct Parameter {
  std::string name;         // "attn.qkv.weight": unique within the layer
  Tensor* value = nullptr;  // this rank's slice, shape SliceShape(full_shape, slice)
  Tensor* grad = nullptr;   // same shape; accumulated by backward, zeroed by the caller
  Shape full_shape;         // of the whole tensor (all tp ranks)
  Slice slice;              // the part of full_shape this rank holds
  // The gradient covers this rank's share of the sequence only (a norm's weight under
  // sequence parallelism): the caller sums it over the tp group before the optimizer step.
  bool tp_partial_grad = false;

  // The shape and size of `value`, also while the value is released (a layer's parameters
  // under dp_sharding full exist only while it runs: runtime/train/grad_sync.h).
  Shape shape() const { return SliceShape(full_shape, slice); }
  int64_t numel() const { return NumElements(shape()); }
};

class Layer {
 public:
  Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;
  virtual ~Layer() = default;

  // See the file comment. REQUIRES: no stash is held for `micro_batch`; `input` is as the
  // kind takes it; `targets` (int32 [B, S], LM head only, ignored elsewhere) stays alive and
  // unchanged until BackwardInput of this micro-batch.
  virtual Tensor Forward(int micro_batch, Tensor input, const Tensor* targets = nullptr) = 0;
  // REQUIRES: Forward(micro_batch) was called and BackwardInput(micro_batch) was not.
  virtual Tensor BackwardInput(int micro_batch, Tensor output_grad) = 0;
  // REQUIRES: BackwardInput(micro_batch) was called. Frees the micro-batch's stash.
  virtual void BackwardWeight(int micro_batch) = 0;
  // Frees the stash of `micro_batch` without a backward (evaluation, an abandoned step).
  virtual void Discard(int micro_batch) = 0;

  // The parameters this rank holds, in a fixed order (the same on every rank).
  virtual std::vector<Parameter> Parameters() = 0;
  // Bytes of the tensors kept for `micro_batch` (0 when none): the sum of their sizes. After
  // Forward it is the activation stash (compare models/ stashed_bytes); between BackwardInput
  // and BackwardWeight it is what the weight gradient still needs. Exactly what the micro-batch
  // holds in the backend's allocator (tested).
  virtual int64_t StashBytes(int micro_batch) const = 0;
};

// The layer of `kind` for `model` on the rank that `context` describes.
// REQUIRES: model.Validate() ok; context.tp_size divides heads, kv_heads and ffn_hidden
// (ModelSpec::TensorParallelProblem is empty); context.compute set; tp_comm set when
// tp_size > 1; model.dropout == 0 (dropout is not implemented yet); kind is not generic
// (generic layers have no implementation). Unsupported
// combinations abort with what is missing (see README.md).
std::unique_ptr<Layer> MakeLayer(const ModelSpec& model, LayerKind kind,
                                 const LayerContext& context);

}  // namespace trident
