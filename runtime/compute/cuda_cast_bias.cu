// CudaCompute's casts (a device copy between equal types) and bias ops. Casts and bias adds run
// grid-stride loops over the elements. Bias gradients give each block 32 columns and split
// their rows over the block's warps in a fixed pattern, summed in a fixed order: no atomics,
// the same bits on every run.
#include "runtime/compute/cuda_kernels.cuh"

namespace trident {
namespace {

using cuda_kernels::DispatchFloat;
using cuda_kernels::FlatIndex;
using cuda_kernels::FlatStride;
using cuda_kernels::GridFor;
using cuda_kernels::kThreads;
using cuda_kernels::kWarp;
using cuda_kernels::Load;
using cuda_kernels::Ptr;
using cuda_kernels::Store;

// Bias gradients: a block covers kWarp columns with kBiasRowGroups warps down the rows.
constexpr int kBiasRowGroups = 32;

template <typename S, typename D>
__global__ void CastKernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) Store(dst, i, Load(src, i));
}

template <typename T>
__global__ void AddBiasKernel(const T* bias_C, T* y_NC, int64_t cols, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    Store(y_NC, i, Load(y_NC, i) + Load(bias_C, i % cols));
  }
}

// Block (kWarp, kBiasRowGroups): thread (x, y) sums rows y, y + kBiasRowGroups, ... of column
// tile·kWarp + x in order; thread (x, 0) then adds the kBiasRowGroups partial sums in order.
template <typename T>
__global__ void BiasGradKernel(const T* dy_NC, T* dbias_C, int64_t rows, int64_t cols) {
  __shared__ float partial[kBiasRowGroups][kWarp + 1];
  const int64_t tiles = (cols + kWarp - 1) / kWarp;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t c = tile * kWarp + threadIdx.x;
    float sum = 0.0f;
    if (c < cols) {
      for (int64_t n = threadIdx.y; n < rows; n += kBiasRowGroups) sum += Load(dy_NC, n * cols + c);
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
      float total = Load(dbias_C, c);
      for (int g = 0; g < kBiasRowGroups; ++g) total += partial[g][threadIdx.x];
      Store(dbias_C, c, total);
    }
    __syncthreads();  // `partial` is rewritten by the next tile
  }
}

}  // namespace

void CudaCompute::DoCast(const Tensor& src, Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (src.type() == dst.type()) {
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(),
                                       static_cast<size_t>(src.bytes()), cudaMemcpyDeviceToDevice,
                                       stream()));
    return;
  }
  DispatchFloat(src.type(), [&](auto src_tag) {
    DispatchFloat(dst.type(), [&](auto dst_tag) {
      using S = decltype(src_tag);
      using D = decltype(dst_tag);
      CastKernel<S, D><<<GridFor(n), kThreads, 0, stream()>>>(Ptr<S>(src), Ptr<D>(dst), n);
    });
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoAddBias(const Tensor& bias_C, Tensor& y_NC) {
  const int64_t cols = bias_C.numel();
  const int64_t n = y_NC.numel();
  if (cols == 0 || n == 0) return;
  DispatchFloat(y_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    AddBiasKernel<T><<<GridFor(n), kThreads, 0, stream()>>>(Ptr<T>(bias_C), Ptr<T>(y_NC), cols, n);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoBiasGrad(const Tensor& dy_NC, Tensor& dbias_C) {
  const int64_t cols = dbias_C.numel();
  if (cols == 0) return;
  const int64_t rows = dy_NC.numel() / cols;
  if (rows == 0) return;
  const int64_t tiles = (cols + kWarp - 1) / kWarp;
  const unsigned blocks = static_cast<unsigned>(tiles < 65535 * 16 ? tiles : 65535 * 16);
  const dim3 threads(kWarp, kBiasRowGroups);
  DispatchFloat(dbias_C.type(), [&](auto tag) {
    using T = decltype(tag);
    BiasGradKernel<T><<<blocks, threads, 0, stream()>>>(Ptr<T>(dy_NC), Ptr<T>(dbias_C), rows, cols);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace trident
