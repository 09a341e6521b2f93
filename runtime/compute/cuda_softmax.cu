// CudaCompute's softmax over the last dimension, optionally causal, and its backward; one
// block per row, reductions in fp32 (BlockMax, BlockSum).
//
// Forward, per row: y_j = exp(x_j − max) / Σ_k exp(x_k − max) over the kept columns. In a
// causal [.., R, C] tensor, flat row n is row i = n mod R of its score matrix and keeps
// columns 0..i + offset; y is 0 past them and x is not read there.
// Backward, per row: dx = y ⊙ (dy − Σ_j dy_j·y_j) (the Jacobian of softmax is diag(y) − y·yᵀ).
// Aliasing (y with x, dx with dy): a block finishes its row's reductions before it writes,
// and each thread writes only the elements it has just read.
#include <algorithm>
#include <cstdint>

#include "runtime/compute/cuda_kernels.cuh"
#include "runtime/compute/op_check.h"

namespace trident {
namespace {

using cuda_kernels::BlockMax;
using cuda_kernels::BlockSum;
using cuda_kernels::DispatchFloat;
using cuda_kernels::kRowThreads;
using cuda_kernels::Load;
using cuda_kernels::Ptr;
using cuda_kernels::RowGrid;
using cuda_kernels::Store;

template <typename T>
__global__ void SoftmaxKernel(const T* x_NC, SoftmaxMask mask, int64_t matrix_rows, int64_t rows,
                              int64_t cols, T* y_NC) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    T* y = y_NC + n * cols;
    const int64_t kept = mask.causal ? n % matrix_rows + mask.offset + 1 : cols;
    float max = -INFINITY;
    for (int64_t c = threadIdx.x; c < kept; c += blockDim.x) max = fmaxf(max, Load(x, c));
    max = BlockMax(max);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < kept; c += blockDim.x) sum += expf(Load(x, c) - max);
    const float inv_sum = 1.0f / BlockSum(sum);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      Store(y, c, c < kept ? expf(Load(x, c) - max) * inv_sum : 0.0f);
    }
  }
}

template <typename T>
__global__ void SoftmaxBackwardKernel(const T* y_NC, const T* dy_NC, int64_t rows, int64_t cols,
                                      T* dx_NC) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* y = y_NC + n * cols;
    const T* dy = dy_NC + n * cols;
    T* dx = dx_NC + n * cols;
    float dot = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dot += Load(dy, c) * Load(y, c);
    dot = BlockSum(dot);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      Store(dx, c, Load(y, c) * (Load(dy, c) - dot));
    }
  }
}

}  // namespace

void CudaCompute::DoSoftmax(const Tensor& x, const SoftmaxMask& mask, Tensor& y) {
  const int64_t rows = MatrixRows(x);
  const int64_t cols = MatrixCols(x);
  if (rows == 0 || cols == 0) return;
  const int64_t matrix_rows = mask.causal ? x.dim(-2) : 1;
  DispatchFloat(x.type(), [&](auto tag) {
    using T = decltype(tag);
    SoftmaxKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(Ptr<T>(x), mask, matrix_rows,
                                                                  rows, cols, Ptr<T>(y));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaCompute::DoSoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  const int64_t rows = MatrixRows(y);
  const int64_t cols = MatrixCols(y);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(y.type(), [&](auto tag) {
    using T = decltype(tag);
    SoftmaxBackwardKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(Ptr<T>(y), Ptr<T>(dy),
                                                                          rows, cols, Ptr<T>(dx));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace trident
