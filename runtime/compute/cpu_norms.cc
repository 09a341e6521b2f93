// CpuCompute's norms: LayerNorm and, without its centering and shift, RMSNorm (DoNorm: mean_N,
// beta_C and dbeta_C are undefined for RMSNorm). Forward and dx work row by row (rows split
// across threads); dgamma and dbeta split the columns, so each column sums its rows in order.
//
// Per row, with m = mean(x) for LayerNorm and 0 for RMSNorm:
//   rstd = 1 / sqrt(mean((x − m)²) + eps),  x̂ = (x − m)·rstd,  y = x̂ ⊙ gamma (+ beta).
// Backward, with g = dy ⊙ gamma (Ba et al.; llm.c's layernorm_backward), and mean(g) only for
// LayerNorm:  dx += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)),  dgamma += Σ_n dy ⊙ x̂,
// dbeta += Σ_n dy. The means are over the C columns of the row. Subtracting a zero mean is
// exact, so RMSNorm gets the bits of its own formulas.
#include <cmath>

#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"
#include "runtime/compute/op_check.h"

namespace trident {

void CpuCompute::DoNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C, float eps,
                        Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) {
  const int64_t cols = MatrixCols(x_NC);
  if (cols == 0) return;
  const bool centered = mean_N.defined();
  const ConstArrayMap gamma = Elements(gamma_C, 0, cols);
  threads_.ParallelFor(MatrixRows(x_NC), cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const ConstArrayMap x = Row(x_NC, cols, n);
      const float mean = centered ? x.mean() : 0.0f;
      const float rstd = 1.0f / std::sqrt((x - mean).square().mean() + eps);
      if (centered) {
        Row(y_NC, cols, n) = (x - mean) * rstd * gamma + Elements(beta_C, 0, cols);
        mean_N.data<float>()[n] = mean;
      } else {
        Row(y_NC, cols, n) = x * rstd * gamma;
      }
      rstd_N.data<float>()[n] = rstd;
    }
  });
}

void CpuCompute::DoNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& mean_N,
                                const Tensor& rstd_N, const Tensor& dy_NC, Tensor& dx_NC,
                                Tensor& dgamma_C, Tensor& dbeta_C) {
  const int64_t cols = MatrixCols(x_NC);
  const int64_t rows = MatrixRows(x_NC);
  if (cols == 0) return;
  const bool centered = mean_N.defined();
  const ConstArrayMap gamma = Elements(gamma_C, 0, cols);
  const auto mean = [&](int64_t n) { return centered ? mean_N.data<float>()[n] : 0.0f; };
  const float* rstd = rstd_N.data<float>();
  threads_.ParallelFor(rows, cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const auto x_hat = (Row(x_NC, cols, n) - mean(n)) * rstd[n];
      const auto g = Row(dy_NC, cols, n) * gamma;
      const float g_mean = centered ? g.mean() : 0.0f;
      const float g_x_hat_mean = (g * x_hat).mean();
      Row(dx_NC, cols, n) += rstd[n] * (g - g_mean - x_hat * g_x_hat_mean);
    }
  });
  threads_.ParallelFor(cols, rows, [&](int64_t begin, int64_t end) {
    ArrayMap dgamma = Elements(dgamma_C, begin, end);
    for (int64_t n = 0; n < rows; ++n) {
      const ConstArrayMap dy = RowSegment(dy_NC, cols, n, begin, end);
      dgamma += dy * (RowSegment(x_NC, cols, n, begin, end) - mean(n)) * rstd[n];
      if (centered) Elements(dbeta_C, begin, end) += dy;
    }
  });
}

}  // namespace trident
