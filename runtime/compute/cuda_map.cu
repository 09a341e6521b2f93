// CudaCompute's elementwise ops: one grid-stride kernel for every map of compute_maps.h. Each
// thread loads element i of the operands the map reads into registers (bf16 widened to fp32),
// runs the map, and stores the operands it writes (rounded once). Every element is read before
// it is written, so an output may alias an input where compute.h allows.
#include <variant>

#include "runtime/compute/compute_maps.h"
#include "runtime/compute/cuda_kernels.cuh"

namespace trident {
namespace {

using cuda_kernels::DispatchFloat;
using cuda_kernels::FlatIndex;
using cuda_kernels::FlatStride;
using cuda_kernels::GridFor;
using cuda_kernels::kThreads;
using cuda_kernels::Load;
using cuda_kernels::Store;

// The operands' device pointers, passed by value to the kernel.
template <typename T, int N>
struct MapPointers {
  T* data[N];
};

template <typename T, typename Op>
__global__ void MapKernel(MapPointers<T, Op::kOperands> p, int64_t n, Op op) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    float x[Op::kOperands];
#pragma unroll
    for (int k = 0; k < Op::kOperands; ++k)
      x[k] = (Op::kReads >> k) & 1u ? Load(p.data[k], i) : 0.0f;
    op(x);
#pragma unroll
    for (int k = 0; k < Op::kOperands; ++k) {
      if ((Op::kWrites >> k) & 1u) Store(p.data[k], i, x[k]);
    }
  }
}

}  // namespace

void CudaCompute::DoMap(const MapCall& call) {
  std::visit(
      [&](const auto& op) {
        using Op = std::decay_t<decltype(op)>;
        DispatchFloat(call.type, [&](auto tag) {
          using T = decltype(tag);
          MapPointers<T, Op::kOperands> p;
          for (int k = 0; k < Op::kOperands; ++k) p.data[k] = static_cast<T*>(call.data[k]);
          MapKernel<T, Op><<<GridFor(call.numel), kThreads, 0, stream()>>>(p, call.numel, op);
        });
      },
      call.op);
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace trident
