// CudaCompute's norms: LayerNorm and, without its centering and shift, RMSNorm (DoNorm: mean_N,
// beta_C and dbeta_C are undefined for RMSNorm, and their pointers null in the kernels). Forward
// and dx run one block per row (row sums with BlockSum, in fp32); dgamma and dbeta run one
// thread per column, which adds its rows in order onto the existing value, so the weight
// gradients are deterministic.
//
// Per row, with m = mean(x) for LayerNorm (a first pass over the row) and 0 for RMSNorm:
//   rstd = 1 / sqrt(mean((x − m)²) + eps),  x̂ = (x − m)·rstd,  y = x̂ ⊙ gamma (+ beta).
// Backward, with g = dy ⊙ gamma, mean(g) only for LayerNorm, and the means over the C columns
// of the row (cpu_norms.cc):  dx += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)),
//   dgamma += Σ_n dy ⊙ x̂,  dbeta += Σ_n dy.
#include <algorithm>
#include <cstdint>

#include "runtime/compute/cuda_kernels.cuh"
#include "runtime/compute/op_check.h"

namespace trident {
namespace {

using cuda_kernels::BlockSum;
using cuda_kernels::DispatchFloat;
using cuda_kernels::FlatIndex;
using cuda_kernels::FlatStride;
using cuda_kernels::GridFor;
using cuda_kernels::kRowThreads;
using cuda_kernels::kThreads;
using cuda_kernels::Load;
using cuda_kernels::Ptr;
using cuda_kernels::RowGrid;
using cuda_kernels::Store;

// mean_N and beta_C are null for RMSNorm.
template <typename T>
__global__ void NormKernel(const T* x_NC, const T* gamma_C, const T* beta_C, float eps,
                           int64_t rows, int64_t cols, T* y_NC, float* mean_N, float* rstd_N) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    T* y = y_NC + n * cols;
    float mean = 0.0f;
    if (mean_N != nullptr) {
      float sum = 0.0f;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += Load(x, c);
      mean = BlockSum(sum) / static_cast<float>(cols);
    }
    float square_sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float d = Load(x, c) - mean;
      square_sum += d * d;
    }
    const float rstd = 1.0f / sqrtf(BlockSum(square_sum) / static_cast<float>(cols) + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float scaled = (Load(x, c) - mean) * rstd * Load(gamma_C, c);
      Store(y, c, beta_C != nullptr ? scaled + Load(beta_C, c) : scaled);
    }
    if (threadIdx.x == 0) {
      if (mean_N != nullptr) mean_N[n] = mean;
      rstd_N[n] = rstd;
    }
  }
}

// mean_N is null for RMSNorm.
template <typename T>
__global__ void NormDxKernel(const T* x_NC, const T* gamma_C, const float* mean_N,
                             const float* rstd_N, const T* dy_NC, int64_t rows, int64_t cols,
                             T* dx_NC) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    const T* dy = dy_NC + n * cols;
    T* dx = dx_NC + n * cols;
    const float mean = mean_N != nullptr ? mean_N[n] : 0.0f;
    const float rstd = rstd_N[n];
    float g_sum = 0.0f;
    float g_x_hat_sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = Load(dy, c) * Load(gamma_C, c);
      g_sum += g;
      g_x_hat_sum += g * ((Load(x, c) - mean) * rstd);
    }
    const float g_mean = mean_N != nullptr ? BlockSum(g_sum) / static_cast<float>(cols) : 0.0f;
    const float g_x_hat_mean = BlockSum(g_x_hat_sum) / static_cast<float>(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float x_hat = (Load(x, c) - mean) * rstd;
      const float g = Load(dy, c) * Load(gamma_C, c);
      Store(dx, c, Load(dx, c) + rstd * (g - g_mean - x_hat * g_x_hat_mean));
    }
  }
}

// One thread per column (consecutive threads, consecutive columns), rows in order. mean_N and
// dbeta_C are null for RMSNorm.
template <typename T>
__global__ void NormParamGradKernel(const T* x_NC, const float* mean_N, const float* rstd_N,
                                    const T* dy_NC, int64_t rows, int64_t cols, T* dgamma_C,
                                    T* dbeta_C) {
  for (int64_t c = FlatIndex(); c < cols; c += FlatStride()) {
    float dgamma = Load(dgamma_C, c);
    float dbeta = dbeta_C != nullptr ? Load(dbeta_C, c) : 0.0f;
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t i = n * cols + c;
      const float dy = Load(dy_NC, i);
      const float mean = mean_N != nullptr ? mean_N[n] : 0.0f;
      dgamma += dy * (Load(x_NC, i) - mean) * rstd_N[n];
      dbeta += dy;
    }
    Store(dgamma_C, c, dgamma);
    if (dbeta_C != nullptr) Store(dbeta_C, c, dbeta);
  }
}

// The tensor's device pointer, or null for an undefined tensor (RMSNorm's mean and beta).
template <typename T>
T* PtrOrNull(Tensor& t) {
  return t.defined() ? Ptr<T>(t) : nullptr;
}
template <typename T>
const T* PtrOrNull(const Tensor& t) {
  return t.defined() ? Ptr<T>(t) : nullptr;
}

}  // namespace

void CudaCompute::DoNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C, float eps,
                         Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) {
  const int64_t rows = MatrixRows(x_NC);
  const int64_t cols = MatrixCols(x_NC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(x_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    NormKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<T>(gamma_C), PtrOrNull<T>(beta_C), eps, rows, cols, Ptr<T>(y_NC),
        PtrOrNull<float>(mean_N), Ptr<float>(rstd_N));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaCompute::DoNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& mean_N,
                                 const Tensor& rstd_N, const Tensor& dy_NC, Tensor& dx_NC,
                                 Tensor& dgamma_C, Tensor& dbeta_C) {
  const int64_t rows = MatrixRows(x_NC);
  const int64_t cols = MatrixCols(x_NC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(x_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    NormDxKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<T>(gamma_C), PtrOrNull<float>(mean_N), Ptr<float>(rstd_N), Ptr<T>(dy_NC),
        rows, cols, Ptr<T>(dx_NC));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
    NormParamGradKernel<T><<<GridFor(cols), kThreads, 0, stream()>>>(
        Ptr<T>(x_NC), PtrOrNull<float>(mean_N), Ptr<float>(rstd_N), Ptr<T>(dy_NC), rows, cols,
        Ptr<T>(dgamma_C), PtrOrNull<T>(dbeta_C));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace trident
