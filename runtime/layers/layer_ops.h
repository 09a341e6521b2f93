// Building blocks shared by the layers: parameters with plan-independent initialization, linear
// products in [out, in] weight layout, the ends of a tp region (all-reduce, or all-gather and
// reduce-scatter under sequence parallelism) and per-micro-batch stashes.
// Legend as in layer.h: N tokens, I in-features, O out-features, C any last dim.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "models/layer_shapes.h"
#include "runtime/checkpoint/init_values.h"
#include "runtime/layers/layer.h"

namespace trident {

// A parameter owned by a layer: value and gradient tensors plus where they sit in the full one.
struct OwnedParameter {
  std::string name;
  Tensor value;
  Tensor grad;
  Shape full_shape;
  Slice slice;
  bool tp_partial_grad = false;  // see Parameter

  Parameter Ref() { return {name, &value, &grad, full_shape, slice, tp_partial_grad}; }
};

// Allocates this rank's slice (ShardSlice of shape.full along shape.axis) of the parameter and
// fills it with InitValues(context.seed, context.layer_index, shape.name, init, shape.full,
// slice); grad is zero. Aborts unless the slice has the shape models/ gives (shape.local).
OwnedParameter MakeParameter(const LayerContext& context, const ParamShape& shape,
                             const InitKind& init);

// A norm's weight or bias: MakeParameter, its gradient partial under sequence parallelism (the
// norm runs on this rank's tokens only; Parameter::tp_partial_grad).
OwnedParameter MakeNormParameter(const LayerContext& context, const ParamShape& shape,
                                 const InitKind& init);

// GPT-2 initialization: weights normal(0, 0.02).
inline InitKind WeightInit() { return InitKind::Normal(0.02); }

// y_NO = x_NI · w_OI^T (+ bias_O when defined). Overwrites y.
void LinearForward(Compute& compute, const Tensor& x_NI, const Tensor& w_OI, const Tensor* bias_O,
                   Tensor& y_NO);
// dx_NI = dy_NO · w_OI (overwrites).
void LinearBackwardInput(Compute& compute, const Tensor& dy_NO, const Tensor& w_OI, Tensor& dx_NI);
// dw_OI += dy_NO^T · x_NI; dbias_O += column sums of dy (when dbias is given).
void LinearBackwardWeight(Compute& compute, const Tensor& x_NI, const Tensor& dy_NO, Tensor& dw_OI,
                          Tensor* dbias_O);

// The two ends of a tensor-parallel region (attention, MLP, the LM head's projection), which
// computes on the whole sequence. Aborts on a failed collective; nothing to do for tp 1.
// Entering: the region's whole input [B, S, C] from this rank's residual-stream tensor: under
// sequence parallelism an all-gather along S of every rank's [B, S/t, C] (rank r holds tokens
// [r·S/t, (r+1)·S/t) of each sequence), else `local` itself. Backward of TpReduce.
Tensor TpGather(const LayerContext& context, Tensor local_BSC);
// The same for an input the caller keeps (a stashed one): without sequence parallelism a view
// of `local`, valid while it lives.
Tensor TpGatherKept(const LayerContext& context, Tensor& local_BSC);
// Leaving: the sum over the group of every rank's partial [B, S, C], as this rank's residual-
// stream share: under sequence parallelism a reduce-scatter along S to [B, S/t, C], else an
// all-reduce in place. Backward of TpGather.
Tensor TpReduce(const LayerContext& context, Tensor partial_BSC);

// Context parallelism (LayerContext::cp_*): this rank's local sequence of S/cp tokens is the
// sequence's chunks cp_rank and 2·cp − 1 − cp_rank (each S/(2·cp) long, in that order).
// The sequence positions of the tokens of a local sequence of `local_seq` tokens
// (ContextPositions of models/layer_shapes.h).
std::vector<int64_t> SequencePositions(const LayerContext& context, int64_t local_seq);
// One causal block of query rows of a local sequence: rows [first_row, first_row + rows) sit at
// sequence positions first_position, first_position + 1, ...
struct QueryChunk {
  int64_t first_row = 0;
  int64_t rows = 0;
  int64_t first_position = 0;
};
// The query chunks of a local sequence: this rank's two under context parallelism, else the
// whole sequence as one (LayerShapes::QueryChunks).
std::vector<QueryChunk> QueryChunks(const LayerContext& context, int64_t local_seq);
// The causal softmax of chunk-major scores [chunks·B, Al, rows, keys] (LayerShapes::Scores) in
// place: chunk k's rows are masked by their sequence positions.
void CausalSoftmax(Compute& compute, const std::vector<QueryChunk>& chunks, Tensor& scores);
// The whole sequences [B, S, ..] from every cp rank's local [B, S/cp, ..], in sequence order: an
// all-gather over the cp group (a view of `local` for cp 1). Aborts on a failed collective.
Tensor CpGather(const LayerContext& context, Tensor& local_BS);
// Backward of CpGather: this rank's local part [B, S/cp, ..] of the sum over the cp group of
// every rank's whole-sequence gradient [B, S, ..], by a reduce-scatter (`whole` for cp 1).
Tensor CpReduce(const LayerContext& context, Tensor whole_BS);
// `t`'s elements as a Comm buffer (fp32 or bf16). REQUIRES: t is fp32 or bf16.
Wire WireOf(const Tensor& t);
// A copy of `src` (same shape) in a new tensor.
Tensor Clone(Compute& compute, const Tensor& src);

// The micro-batch of a tensor whose first two dims are [B, S] (ids, activations).
TokenBlock TokensOf(const Tensor& t_BS);

// Row n of `t` seen as a matrix [N, C]: a view of its C elements.
Tensor RowOf(Tensor& t_NC, int64_t n);
// `t` seen as a matrix [numel / columns, columns]. REQUIRES: columns divides numel.
Tensor MatrixView(Tensor& t, int64_t columns);

// Bytes of the listed tensors (undefined ones count 0).
int64_t SumBytes(std::initializer_list<const Tensor*> tensors);

// The stashes of the micro-batches in flight. T has `int64_t Bytes() const`.
template <typename T>
class StashMap {
 public:
  void Put(int micro_batch, T stash) {
    TRIDENT_CHECK(!map_.contains(micro_batch))
        << "micro-batch " << micro_batch << " already has a stash (Forward called twice?)";
    map_.emplace(micro_batch, std::move(stash));
  }
  T& Get(int micro_batch) {
    auto it = map_.find(micro_batch);
    TRIDENT_CHECK(it != map_.end())
        << "no stash for micro-batch " << micro_batch << " (Forward not called, or already freed)";
    return it->second;
  }
  void Erase(int micro_batch) { map_.erase(micro_batch); }
  int64_t Bytes(int micro_batch) const {
    auto it = map_.find(micro_batch);
    return it == map_.end() ? 0 : it->second.Bytes();
  }

 private:
  std::map<int, T> map_;
};

}  // namespace trident
