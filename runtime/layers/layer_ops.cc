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
  p.value = context.compute->Allocate(host.shape);
  context.compute->CopyFromHost(std::span<const float>(host.values), p.value);
  p.grad = context.compute->Allocate(host.shape);
  p.name = shape.name;
  p.full_shape = shape.full;
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

void TpAllReduce(const LayerContext& context, Tensor& t) {
  if (context.tp_comm == nullptr || context.tp_size == 1) return;
  // Host buffers: the CPU backend's tensors live in host memory (an NCCL backend will take
  // device pointers instead).
  context.compute->Synchronize();
  Status status = context.tp_comm->AllReduceSum(t.span<float>());
  TRIDENT_CHECK(status.ok()) << "tp all-reduce of " << t.ToString() << " in layer "
                             << context.layer_index << " failed: " << status.ToString();
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
