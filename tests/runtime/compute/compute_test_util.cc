#include "compute_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "runtime/compute/compute_factory.h"

namespace trident {

const CudaBackend& Cuda() {
  static const CudaBackend* const backend = [] {
    auto* made = new CudaBackend;
    StatusOr<std::unique_ptr<Compute>> cuda = MakeCompute({.device = "cuda"});
    if (cuda.ok()) {
      made->compute = std::move(cuda).value();
    } else {
      made->error = cuda.status().message();
    }
    return made;
  }();
  return *backend;
}

std::vector<float> RandomFloats(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = dist(rng);
  return values;
}

std::vector<int32_t> RandomIds(int64_t n, int32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

std::vector<double> ToDouble(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

Tensor Upload(Compute& compute, std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = compute.Allocate(std::move(shape));
  compute.CopyFromHost(values, t);
  return t;
}

Tensor UploadIds(Compute& compute, std::vector<int64_t> shape, const std::vector<int32_t>& ids) {
  Tensor t = compute.Allocate(std::move(shape), ElementType::kInt32);
  compute.CopyFromHost(ids, t);
  return t;
}

std::vector<float> Download(Compute& compute, const Tensor& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  compute.CopyToHost(t, values);
  return values;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected, double tol,
                const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    const double limit = tol * std::max(1.0, std::abs(expected[i]));
    if (!(std::abs(actual[i] - expected[i]) <= limit)) {
      ADD_FAILURE() << what << "[" << i << "]: got " << actual[i] << ", expected " << expected[i]
                    << " (tolerance " << limit << ")";
      ++failures;
    }
  }
}

// The rounding error of an fp32 dot product of length K is at most γ_K·Σ|a_k·b_k| with
// γ_K ≈ K·u in any summation order (Higham, Accuracy and Stability, §3.1); scaling by alpha
// and adding beta·c cost two more roundings.
std::vector<double> RefGemm(bool trans_a, bool trans_b, double alpha, const std::vector<double>& a,
                            int64_t a_rows, int64_t a_cols, const std::vector<double>& b,
                            int64_t b_rows, int64_t b_cols, double beta,
                            const std::vector<double>& c, std::vector<double>* bound) {
  const int64_t m = trans_a ? a_cols : a_rows;
  const int64_t k = trans_a ? a_rows : a_cols;
  const int64_t n = trans_b ? b_rows : b_cols;
  auto at = [&](int64_t i, int64_t p) { return trans_a ? a[p * a_cols + i] : a[i * a_cols + p]; };
  auto bt = [&](int64_t p, int64_t j) { return trans_b ? b[j * b_cols + p] : b[p * b_cols + j]; };
  std::vector<double> out(static_cast<size_t>(m * n));
  if (bound != nullptr) bound->assign(out.size(), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      double magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += at(i, p) * bt(p, j);
        magnitude += std::abs(at(i, p) * bt(p, j));
      }
      const size_t ij = static_cast<size_t>(i * n + j);
      const double c_ij = beta == 0 ? 0.0 : beta * c[ij];
      out[ij] = alpha * sum + c_ij;
      if (bound != nullptr) {
        (*bound)[ij] =
            static_cast<double>(k + 3) * kFloatEps * (std::abs(alpha) * magnitude + std::abs(c_ij));
      }
    }
  }
  return out;
}

double RefGelu(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double RefSilu(double x) { return x / (1.0 + std::exp(-x)); }

std::vector<double> RefSoftmax(const std::vector<double>& x, int64_t cols, bool causal,
                               int64_t matrix_rows, int64_t offset) {
  if (matrix_rows == 0) matrix_rows = cols;
  std::vector<double> y(x.size(), 0.0);
  for (size_t row = 0; row < x.size() / static_cast<size_t>(cols); ++row) {
    const size_t kept =
        causal ? row % static_cast<size_t>(matrix_rows) + offset + 1 : static_cast<size_t>(cols);
    const size_t base = row * static_cast<size_t>(cols);
    double sum = 0;
    for (size_t j = 0; j < kept; ++j) sum += std::exp(x[base + j]);
    for (size_t j = 0; j < kept; ++j) y[base + j] = std::exp(x[base + j]) / sum;
  }
  return y;
}

std::vector<double> RefLayerNorm(const std::vector<double>& x, const std::vector<double>& gamma,
                                 const std::vector<double>& beta, double eps,
                                 std::vector<double>* mean, std::vector<double>* rstd) {
  const size_t cols = gamma.size();
  std::vector<double> y(x.size());
  for (size_t row = 0; row < x.size() / cols; ++row) {
    double mu = 0;
    double var = 0;
    for (size_t j = 0; j < cols; ++j) mu += x[row * cols + j] / static_cast<double>(cols);
    for (size_t j = 0; j < cols; ++j) {
      var += (x[row * cols + j] - mu) * (x[row * cols + j] - mu) / static_cast<double>(cols);
    }
    const double r = 1.0 / std::sqrt(var + eps);
    for (size_t j = 0; j < cols; ++j) {
      y[row * cols + j] = (x[row * cols + j] - mu) * r * gamma[j] + beta[j];
    }
    if (mean != nullptr) mean->push_back(mu);
    if (rstd != nullptr) rstd->push_back(r);
  }
  return y;
}

std::vector<double> RefRmsNorm(const std::vector<double>& x, const std::vector<double>& gamma,
                               double eps, std::vector<double>* rstd) {
  const size_t cols = gamma.size();
  std::vector<double> y(x.size());
  for (size_t row = 0; row < x.size() / cols; ++row) {
    double mean_square = 0;
    for (size_t j = 0; j < cols; ++j) {
      mean_square += x[row * cols + j] * x[row * cols + j] / static_cast<double>(cols);
    }
    const double r = 1.0 / std::sqrt(mean_square + eps);
    for (size_t j = 0; j < cols; ++j) y[row * cols + j] = x[row * cols + j] * r * gamma[j];
    if (rstd != nullptr) rstd->push_back(r);
  }
  return y;
}

std::vector<double> RefEmbedding(const std::vector<int32_t>& ids, const std::vector<double>& table,
                                 int64_t cols) {
  std::vector<double> out;
  for (int32_t id : ids) {
    for (int64_t j = 0; j < cols; ++j) out.push_back(table[static_cast<size_t>(id * cols + j)]);
  }
  return out;
}

double RefCrossEntropy(const std::vector<double>& logits, int64_t cols,
                       const std::vector<int32_t>& targets, std::vector<double>* probs) {
  const std::vector<double> p = RefSoftmax(logits, cols, /*causal=*/false);
  double loss = 0;
  for (size_t row = 0; row < targets.size(); ++row) {
    loss -= std::log(p[row * static_cast<size_t>(cols) + static_cast<size_t>(targets[row])]);
  }
  if (probs != nullptr) *probs = p;
  return loss / static_cast<double>(targets.size());
}

double Dot(const std::vector<double>& w, const std::vector<double>& y) {
  double sum = 0;
  for (size_t i = 0; i < w.size(); ++i) sum += w[i] * y[i];
  return sum;
}

std::vector<double> NumericGradient(const std::function<double(const std::vector<double>&)>& f,
                                    const std::vector<double>& x, double h) {
  std::vector<double> grad(x.size());
  std::vector<double> probe = x;
  for (size_t i = 0; i < x.size(); ++i) {
    probe[i] = x[i] + h;
    const double up = f(probe);
    probe[i] = x[i] - h;
    const double down = f(probe);
    probe[i] = x[i];
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

}  // namespace trident
