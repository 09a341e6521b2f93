// CpuCompute's LayerNorm and RMSNorm. Forward and dx work row by row (rows split across
// threads); dgamma and dbeta split the columns, so each column sums its rows in order.
//
// LayerNorm backward, per row, with x̂ = (x − mean)·rstd and g = dy ⊙ gamma (Ba et al.;
// llm.c's layernorm_backward):  dx = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)).
// RMSNorm backward, with x̂ = x·rstd:  dx = rstd · (g − x̂ · mean(g ⊙ x̂)).
// The means are over the C columns of the row.
#include <cmath>

#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"
#include "runtime/compute/op_check.h"

namespace trident {

void CpuCompute::DoLayerNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C,
                             float eps, Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) {
  const int64_t cols = MatrixCols(x_NC);
  if (cols == 0) return;
  const ConstArrayMap gamma = Elements(gamma_C, 0, cols);
  const ConstArrayMap beta = Elements(beta_C, 0, cols);
  threads_.ParallelFor(MatrixRows(x_NC), cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const ConstArrayMap x = Row(x_NC, cols, n);
      const float mean = x.mean();
      const float rstd = 1.0f / std::sqrt((x - mean).square().mean() + eps);
      Row(y_NC, cols, n) = (x - mean) * rstd * gamma + beta;
      mean_N.data<float>()[n] = mean;
      rstd_N.data<float>()[n] = rstd;
    }
  });
}

void CpuCompute::DoLayerNormBackward(const Tensor& x_NC, const Tensor& gamma_C,
                                     const Tensor& mean_N, const Tensor& rstd_N,
                                     const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C,
                                     Tensor& dbeta_C) {
  const int64_t cols = MatrixCols(x_NC);
  const int64_t rows = MatrixRows(x_NC);
  if (cols == 0) return;
  const ConstArrayMap gamma = Elements(gamma_C, 0, cols);
  const float* mean = mean_N.data<float>();
  const float* rstd = rstd_N.data<float>();
  threads_.ParallelFor(rows, cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const auto x_hat = (Row(x_NC, cols, n) - mean[n]) * rstd[n];
      const auto g = Row(dy_NC, cols, n) * gamma;
      const float g_mean = g.mean();
      const float g_x_hat_mean = (g * x_hat).mean();
      Row(dx_NC, cols, n) += rstd[n] * (g - g_mean - x_hat * g_x_hat_mean);
    }
  });
  threads_.ParallelFor(cols, rows, [&](int64_t begin, int64_t end) {
    ArrayMap dgamma = Elements(dgamma_C, begin, end);
    ArrayMap dbeta = Elements(dbeta_C, begin, end);
    for (int64_t n = 0; n < rows; ++n) {
      const ConstArrayMap dy = RowSegment(dy_NC, cols, n, begin, end);
      dgamma += dy * (RowSegment(x_NC, cols, n, begin, end) - mean[n]) * rstd[n];
      dbeta += dy;
    }
  });
}

void CpuCompute::DoRmsNorm(const Tensor& x_NC, const Tensor& gamma_C, float eps, Tensor& y_NC,
                           Tensor& rstd_N) {
  const int64_t cols = MatrixCols(x_NC);
  if (cols == 0) return;
  const ConstArrayMap gamma = Elements(gamma_C, 0, cols);
  threads_.ParallelFor(MatrixRows(x_NC), cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const ConstArrayMap x = Row(x_NC, cols, n);
      const float rstd = 1.0f / std::sqrt(x.square().mean() + eps);
      Row(y_NC, cols, n) = x * rstd * gamma;
      rstd_N.data<float>()[n] = rstd;
    }
  });
}

void CpuCompute::DoRmsNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& rstd_N,
                                   const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C) {
  const int64_t cols = MatrixCols(x_NC);
  const int64_t rows = MatrixRows(x_NC);
  if (cols == 0) return;
  const ConstArrayMap gamma = Elements(gamma_C, 0, cols);
  const float* rstd = rstd_N.data<float>();
  threads_.ParallelFor(rows, cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const auto x_hat = Row(x_NC, cols, n) * rstd[n];
      const auto g = Row(dy_NC, cols, n) * gamma;
      const float g_x_hat_mean = (g * x_hat).mean();
      Row(dx_NC, cols, n) += rstd[n] * (g - x_hat * g_x_hat_mean);
    }
  });
  threads_.ParallelFor(cols, rows, [&](int64_t begin, int64_t end) {
    ArrayMap dgamma = Elements(dgamma_C, begin, end);
    for (int64_t n = 0; n < rows; ++n) {
      dgamma +=
          RowSegment(dy_NC, cols, n, begin, end) * RowSegment(x_NC, cols, n, begin, end) * rstd[n];
    }
  });
}

}  // namespace trident
