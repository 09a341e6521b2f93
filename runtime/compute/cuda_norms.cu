// CudaCompute's LayerNorm and RMSNorm. Forward and dx run one block per row (row sums with
// BlockSum, in fp32); dgamma and dbeta run one thread per column, which adds its rows in order
// onto the existing value, so the weight gradients are deterministic.
//
// LayerNorm, per row: mean = mean(x), var = mean((x − mean)²) (two passes over the row),
// rstd = 1 / sqrt(var + eps), y = (x − mean)·rstd ⊙ gamma + beta.
// RMSNorm, per row: rstd = 1 / sqrt(mean(x²) + eps), y = x·rstd ⊙ gamma.
// Backward, with g = dy ⊙ gamma and the means over the C columns of the row (cpu_norms.cc):
//   LayerNorm, x̂ = (x − mean)·rstd:  dx += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)),
//   RMSNorm,   x̂ = x·rstd:           dx += rstd · (g − x̂ · mean(g ⊙ x̂)),
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

template <typename T>
__global__ void LayerNormKernel(const T* x_NC, const T* gamma_C, const T* beta_C, float eps,
                                int64_t rows, int64_t cols, T* y_NC, float* mean_N, float* rstd_N) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    T* y = y_NC + n * cols;
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += Load(x, c);
    const float mean = BlockSum(sum) / static_cast<float>(cols);
    float square_sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float d = Load(x, c) - mean;
      square_sum += d * d;
    }
    const float rstd = 1.0f / sqrtf(BlockSum(square_sum) / static_cast<float>(cols) + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      Store(y, c, (Load(x, c) - mean) * rstd * Load(gamma_C, c) + Load(beta_C, c));
    }
    if (threadIdx.x == 0) {
      mean_N[n] = mean;
      rstd_N[n] = rstd;
    }
  }
}

template <typename T>
__global__ void LayerNormDxKernel(const T* x_NC, const T* gamma_C, const float* mean_N,
                                  const float* rstd_N, const T* dy_NC, int64_t rows, int64_t cols,
                                  T* dx_NC) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    const T* dy = dy_NC + n * cols;
    T* dx = dx_NC + n * cols;
    const float mean = mean_N[n];
    const float rstd = rstd_N[n];
    float g_sum = 0.0f;
    float g_x_hat_sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = Load(dy, c) * Load(gamma_C, c);
      g_sum += g;
      g_x_hat_sum += g * ((Load(x, c) - mean) * rstd);
    }
    const float g_mean = BlockSum(g_sum) / static_cast<float>(cols);
    const float g_x_hat_mean = BlockSum(g_x_hat_sum) / static_cast<float>(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float x_hat = (Load(x, c) - mean) * rstd;
      const float g = Load(dy, c) * Load(gamma_C, c);
      Store(dx, c, Load(dx, c) + rstd * (g - g_mean - x_hat * g_x_hat_mean));
    }
  }
}

// One thread per column (consecutive threads, consecutive columns), rows in order.
template <typename T>
__global__ void LayerNormParamGradKernel(const T* x_NC, const float* mean_N, const float* rstd_N,
                                         const T* dy_NC, int64_t rows, int64_t cols, T* dgamma_C,
                                         T* dbeta_C) {
  for (int64_t c = FlatIndex(); c < cols; c += FlatStride()) {
    float dgamma = Load(dgamma_C, c);
    float dbeta = Load(dbeta_C, c);
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t i = n * cols + c;
      const float dy = Load(dy_NC, i);
      dgamma += dy * (Load(x_NC, i) - mean_N[n]) * rstd_N[n];
      dbeta += dy;
    }
    Store(dgamma_C, c, dgamma);
    Store(dbeta_C, c, dbeta);
  }
}

template <typename T>
__global__ void RmsNormKernel(const T* x_NC, const T* gamma_C, float eps, int64_t rows,
                              int64_t cols, T* y_NC, float* rstd_N) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    T* y = y_NC + n * cols;
    float square_sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float v = Load(x, c);
      square_sum += v * v;
    }
    const float rstd = 1.0f / sqrtf(BlockSum(square_sum) / static_cast<float>(cols) + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      Store(y, c, Load(x, c) * rstd * Load(gamma_C, c));
    }
    if (threadIdx.x == 0) rstd_N[n] = rstd;
  }
}

template <typename T>
__global__ void RmsNormDxKernel(const T* x_NC, const T* gamma_C, const float* rstd_N,
                                const T* dy_NC, int64_t rows, int64_t cols, T* dx_NC) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = x_NC + n * cols;
    const T* dy = dy_NC + n * cols;
    T* dx = dx_NC + n * cols;
    const float rstd = rstd_N[n];
    float g_x_hat_sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      g_x_hat_sum += Load(dy, c) * Load(gamma_C, c) * (Load(x, c) * rstd);
    }
    const float g_x_hat_mean = BlockSum(g_x_hat_sum) / static_cast<float>(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float x_hat = Load(x, c) * rstd;
      const float g = Load(dy, c) * Load(gamma_C, c);
      Store(dx, c, Load(dx, c) + rstd * (g - x_hat * g_x_hat_mean));
    }
  }
}

// One thread per column (consecutive threads, consecutive columns), rows in order.
template <typename T>
__global__ void RmsNormParamGradKernel(const T* x_NC, const float* rstd_N, const T* dy_NC,
                                       int64_t rows, int64_t cols, T* dgamma_C) {
  for (int64_t c = FlatIndex(); c < cols; c += FlatStride()) {
    float dgamma = Load(dgamma_C, c);
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t i = n * cols + c;
      dgamma += Load(dy_NC, i) * Load(x_NC, i) * rstd_N[n];
    }
    Store(dgamma_C, c, dgamma);
  }
}

}  // namespace

void CudaCompute::DoLayerNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C,
                              float eps, Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) {
  const int64_t rows = MatrixRows(x_NC);
  const int64_t cols = MatrixCols(x_NC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(x_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    LayerNormKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<T>(gamma_C), Ptr<T>(beta_C), eps, rows, cols, Ptr<T>(y_NC),
        Ptr<float>(mean_N), Ptr<float>(rstd_N));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaCompute::DoLayerNormBackward(const Tensor& x_NC, const Tensor& gamma_C,
                                      const Tensor& mean_N, const Tensor& rstd_N,
                                      const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C,
                                      Tensor& dbeta_C) {
  const int64_t rows = MatrixRows(x_NC);
  const int64_t cols = MatrixCols(x_NC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(x_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    LayerNormDxKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<T>(gamma_C), Ptr<float>(mean_N), Ptr<float>(rstd_N), Ptr<T>(dy_NC), rows,
        cols, Ptr<T>(dx_NC));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
    LayerNormParamGradKernel<T><<<GridFor(cols), kThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<float>(mean_N), Ptr<float>(rstd_N), Ptr<T>(dy_NC), rows, cols,
        Ptr<T>(dgamma_C), Ptr<T>(dbeta_C));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaCompute::DoRmsNorm(const Tensor& x_NC, const Tensor& gamma_C, float eps, Tensor& y_NC,
                            Tensor& rstd_N) {
  const int64_t rows = MatrixRows(x_NC);
  const int64_t cols = MatrixCols(x_NC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(x_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    RmsNormKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<T>(gamma_C), eps, rows, cols, Ptr<T>(y_NC), Ptr<float>(rstd_N));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaCompute::DoRmsNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& rstd_N,
                                    const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C) {
  const int64_t rows = MatrixRows(x_NC);
  const int64_t cols = MatrixCols(x_NC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(x_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    RmsNormDxKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<T>(gamma_C), Ptr<float>(rstd_N), Ptr<T>(dy_NC), rows, cols,
        Ptr<T>(dx_NC));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
    RmsNormParamGradKernel<T><<<GridFor(cols), kThreads, 0, stream()>>>(
        Ptr<T>(x_NC), Ptr<float>(rstd_N), Ptr<T>(dy_NC), rows, cols, Ptr<T>(dgamma_C));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace trident
