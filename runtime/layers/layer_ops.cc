#include "runtime/layers/layer_ops.h"

#include <span>

namespace trident {

OwnedParameter MakeParameter(const LayerContext& context, std::string name, Shape full_shape,
                             SliceAxis axis, const InitKind& init) {
  OwnedParameter p;
  p.slice = ShardSlice(full_shape, axis, context.tp_size, context.tp_rank);
  HostTensor host = InitValues(context.seed, context.layer_index, name, init, full_shape, p.slice);
  p.value = context.compute->Allocate(host.shape);
  context.compute->CopyFromHost(std::span<const float>(host.values), p.value);
  p.grad = context.compute->Allocate(host.shape);
  p.name = std::move(name);
  p.full_shape = std::move(full_shape);
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

std::vector<int64_t> WithLastDim(const Tensor& t, int64_t last) {
  std::vector<int64_t> shape = t.shape();
  shape.back() = last;
  return shape;
}

int64_t SumBytes(std::initializer_list<const Tensor*> tensors) {
  int64_t bytes = 0;
  for (const Tensor* t : tensors) bytes += t->defined() ? t->bytes() : 0;
  return bytes;
}

}  // namespace trident
