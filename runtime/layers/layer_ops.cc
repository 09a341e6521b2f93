#include "runtime/layers/layer_ops.h"

#include <span>

namespace trident {

namespace {

SliceAxis SliceAxisOf(ShardAxis axis) {
  switch (axis) {
    case ShardAxis::kReplicated:
      return SliceAxis::kFull;
    case ShardAxis::kRows:
      return SliceAxis::kRows;
    case ShardAxis::kColumns:
      return SliceAxis::kColumns;
  }
  return SliceAxis::kFull;
}

}  // namespace

OwnedParameter MakeParameter(const LayerContext& context, const ParamShape& shape,
                             const InitKind& init) {
  OwnedParameter p;
  p.slice = ShardSlice(shape.full, SliceAxisOf(shape.axis), context.tp_size, context.tp_rank);
  HostTensor host =
      InitValues(context.seed, context.layer_index, shape.name, init, shape.full, p.slice);
  TRIDENT_CHECK(host.shape == shape.local)
      << shape.name << ": rank " << context.tp_rank << " of " << context.tp_size << " holds "
      << ShapeToString(host.shape) << " but models/ says " << ShapeToString(shape.local);
  p.value = context.compute->Allocate(host.shape, context.dtype);
  context.compute->CopyFromHost(std::span<const float>(host.values), p.value);
  p.grad = context.compute->Allocate(host.shape);  // fp32 whatever the values' type
  p.name = shape.name;
  p.full_shape = shape.full;
  return p;
}

OwnedParameter MakeNormParameter(const LayerContext& context, const ParamShape& shape,
                                 const InitKind& init) {
  OwnedParameter p = MakeParameter(context, shape, init);
  p.tp_partial_grad = context.sequence_parallel;
  return p;
}

void LinearForward(Compute& compute, const Tensor& x_NI, const Tensor& w_OI, const Tensor* bias_O,
                   Tensor& y_NO) {
  compute.Gemm(false, true, 1.0f, x_NI, w_OI, 0.0f, y_NO);
  if (bias_O != nullptr) compute.AddBias(*bias_O, y_NO);
}

void LinearBackwardInput(Compute& compute, const Tensor& dy_NO, const Tensor& w_OI, Tensor& dx_NI) {
  compute.Gemm(false, false, 1.0f, dy_NO, w_OI, 0.0f, dx_NI);
}

void LinearBackwardWeight(Compute& compute, const Tensor& x_NI, const Tensor& dy_NO, Tensor& dw_OI,
                          Tensor* dbias_O) {
  compute.Gemm(true, false, 1.0f, dy_NO, x_NI, 1.0f, dw_OI);
  if (dbias_O != nullptr) compute.BiasGrad(dy_NO, *dbias_O);
}

namespace {

// `what`: the group and the collective, "tp all-gather".
void CheckCollective(const Status& status, const char* what, const Tensor& t,
                     const LayerContext& context) {
  TRIDENT_CHECK(status.ok()) << what << " of " << t.ToString() << " in layer "
                             << context.layer_index << " failed: " << status.ToString();
}

// Moves the [S/t, C] blocks of `from` [outer, inner, S/t, C] to `to` [inner, outer, S/t, C]:
// between the rank-major layout of the collectives' buffers ([t, B, ...]) and the sequence-
// major one of the tensors ([B, t, ...] = [B, S, C]).
void SwapBlockOrder(Compute& compute, Tensor& from, Tensor& to, int64_t outer, int64_t inner) {
  const int64_t block = from.numel() / (outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      Tensor src = from.View((o * inner + i) * block, {block});
      Tensor dst = to.View((i * outer + o) * block, {block});
      compute.Copy(src, dst);
    }
  }
}

// Every rank's `local` of `comm`, one after another: a new rank-major tensor of `dims`. Host
// buffers on the CPU backend, device pointers on CUDA (the Comm takes what the backend holds);
// Synchronize orders the collective after the ops that wrote the tensor. `what` as in
// CheckCollective.
Tensor AllGatherRankMajor(const LayerContext& context, Comm& comm, const char* what,
                          const Tensor& local, const std::vector<int64_t>& dims) {
  Tensor by_rank = context.compute->Allocate(dims, local.type());
  context.compute->Synchronize();
  CheckCollective(comm.AllGather(WireOf(local), WireOf(by_rank)), what, local, context);
  return by_rank;
}

// This rank's block of the sum over `comm` of every rank's rank-major `by_rank`: a new tensor
// of `dims`.
Tensor ReduceScatterRankMajor(const LayerContext& context, Comm& comm, const char* what,
                              const Tensor& by_rank, const std::vector<int64_t>& dims) {
  Tensor mine = context.compute->Allocate(dims, by_rank.type());
  context.compute->Synchronize();
  CheckCollective(comm.ReduceScatterSum(WireOf(by_rank), WireOf(mine)), what, by_rank, context);
  return mine;
}

bool SequenceSplit(const LayerContext& context) {
  return context.sequence_parallel && context.tp_comm != nullptr && context.tp_size > 1;
}

}  // namespace

Tensor TpGatherKept(const LayerContext& context, Tensor& local_BSC) {
  if (!SequenceSplit(context)) return local_BSC.View(0, local_BSC.shape());
  const int64_t t = context.tp_size, b = local_BSC.dim(0);
  std::vector<int64_t> whole = local_BSC.shape();
  whole[1] *= t;
  Tensor by_rank = AllGatherRankMajor(context, *context.tp_comm, "tp all-gather", local_BSC, whole);
  if (b == 1) return by_rank;
  Tensor out = context.compute->Allocate(whole, local_BSC.type());
  SwapBlockOrder(*context.compute, by_rank, out, t, b);
  return out;
}

Tensor TpGather(const LayerContext& context, Tensor local_BSC) {
  if (!SequenceSplit(context)) return local_BSC;
  return TpGatherKept(context, local_BSC);
}

Tensor TpReduce(const LayerContext& context, Tensor partial_BSC) {
  if (context.tp_comm == nullptr || context.tp_size == 1) return partial_BSC;
  Compute& compute = *context.compute;
  if (!SequenceSplit(context)) {
    compute.Synchronize();
    CheckCollective(context.tp_comm->AllReduceSum(WireOf(partial_BSC)), "tp all-reduce",
                    partial_BSC, context);
    return partial_BSC;
  }
  const int64_t t = context.tp_size, b = partial_BSC.dim(0);
  TRIDENT_CHECK(partial_BSC.dim(1) % t == 0)
      << "sequence parallelism: tp " << t << " does not divide " << partial_BSC.ToString();
  std::vector<int64_t> local = partial_BSC.shape();
  local[1] /= t;
  if (b > 1) {
    Tensor by_rank = compute.Allocate(partial_BSC.shape(), partial_BSC.type());
    SwapBlockOrder(compute, partial_BSC, by_rank, b, t);
    partial_BSC = std::move(by_rank);
  }
  return ReduceScatterRankMajor(context, *context.tp_comm, "tp reduce-scatter", partial_BSC, local);
}

std::vector<int64_t> SequencePositions(const LayerContext& context, int64_t local_seq) {
  return ContextPositions(local_seq * context.cp_size, context.cp_size, context.cp_rank);
}

std::vector<QueryChunk> QueryChunks(const LayerContext& context, int64_t local_seq) {
  if (context.cp_size == 1) return {{0, local_seq, 0}};
  const std::vector<int64_t> positions = SequencePositions(context, local_seq);
  const int64_t chunk = local_seq / 2;
  return {{0, chunk, positions[0]}, {chunk, chunk, positions[static_cast<size_t>(chunk)]}};
}

void CausalSoftmax(Compute& compute, const std::vector<QueryChunk>& chunks, Tensor& scores) {
  const int64_t per_chunk = scores.numel() / static_cast<int64_t>(chunks.size());
  const int64_t keys = scores.dim(-1);
  for (size_t k = 0; k < chunks.size(); ++k) {
    const int64_t rows = chunks[k].rows;
    Tensor block =
        scores.View(static_cast<int64_t>(k) * per_chunk, {per_chunk / (rows * keys), rows, keys});
    compute.Softmax(block, SoftmaxMask::Causal(chunks[k].first_position), block);
  }
}

namespace {

// Copies the chunks between `by_rank` [cp, B, S/cp, ..] (the collectives' rank-major buffer)
// and `whole` [B, S, ..] (sequence order), in the direction `to_whole` says.
void MoveChunks(const LayerContext& context, Tensor& by_rank, Tensor& whole, bool to_whole) {
  const int64_t cp = context.cp_size, batch = whole.dim(0), seq = whole.dim(1);
  const int64_t local_seq = seq / cp, chunk = local_seq / 2;
  const int64_t row = whole.numel() / (batch * seq);  // elements per token
  for (int64_t r = 0; r < cp; ++r) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t k = 0; k < 2; ++k) {
        const int64_t index = k == 0 ? r : 2 * cp - 1 - r;
        Tensor ranked =
            by_rank.View(((r * batch + b) * local_seq + k * chunk) * row, {chunk * row});
        Tensor ordered = whole.View((b * seq + index * chunk) * row, {chunk * row});
        if (to_whole) {
          context.compute->Copy(ranked, ordered);
        } else {
          context.compute->Copy(ordered, ranked);
        }
      }
    }
  }
}

}  // namespace

Tensor CpGather(const LayerContext& context, Tensor& local_BS) {
  if (context.cp_size == 1) return local_BS.View(0, local_BS.shape());
  std::vector<int64_t> whole_dims = local_BS.shape();
  whole_dims[1] *= context.cp_size;
  Tensor by_rank =
      AllGatherRankMajor(context, *context.cp_comm, "cp all-gather", local_BS, whole_dims);
  Tensor whole = context.compute->Allocate(whole_dims, local_BS.type());
  MoveChunks(context, by_rank, whole, /*to_whole=*/true);
  return whole;
}

Tensor CpReduce(const LayerContext& context, Tensor whole_BS) {
  if (context.cp_size == 1) return whole_BS;
  Tensor by_rank = context.compute->Allocate(whole_BS.shape(), whole_BS.type());
  MoveChunks(context, by_rank, whole_BS, /*to_whole=*/false);
  std::vector<int64_t> local_dims = whole_BS.shape();
  local_dims[1] /= context.cp_size;
  return ReduceScatterRankMajor(context, *context.cp_comm, "cp reduce-scatter", by_rank,
                                local_dims);
}

Wire WireOf(const Tensor& t) {
  TRIDENT_CHECK(t.type() == ElementType::kFp32 || t.type() == ElementType::kBf16)
      << "a Comm moves fp32 or bf16, not " << t.ToString();
  const WireType type = t.type() == ElementType::kFp32 ? WireType::kFp32 : WireType::kBf16;
  return Wire(const_cast<void*>(t.raw_data()), static_cast<size_t>(t.numel()), type);
}

Tensor Clone(Compute& compute, const Tensor& src) {
  Tensor out = compute.Allocate(src.shape(), src.type());
  compute.Copy(src, out);
  return out;
}

TokenBlock TokensOf(const Tensor& t_BS) {
  TRIDENT_CHECK(t_BS.rank() >= 2) << "expected [B, S, ...], got " << t_BS.ToString();
  return {t_BS.dim(0), t_BS.dim(1)};
}

Tensor MatrixView(Tensor& t, int64_t columns) { return t.View(0, {t.numel() / columns, columns}); }

Tensor RowOf(Tensor& t_NC, int64_t n) {
  const int64_t width = t_NC.dim(-1);
  return t_NC.View(n * width, {width});
}

int64_t SumBytes(std::initializer_list<const Tensor*> tensors) {
  int64_t bytes = 0;
  for (const Tensor* t : tensors) bytes += t->defined() ? t->bytes() : 0;
  return bytes;
}

}  // namespace trident
