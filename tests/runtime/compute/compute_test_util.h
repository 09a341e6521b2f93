// Helpers for the compute tests: seeded random data, host <-> backend copies, and plain
// double-precision reference loops for every forward op, which the backends are checked
// against (and whose central differences check every backward op).
//
// Shape legend: N rows, C columns (last dimension), V vocabulary, S sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compute/compute.h"

namespace trident {

// fp32 unit roundoff, 2^-24: the relative error of one correctly rounded float operation.
inline constexpr double kFloatEps = 5.960464477539063e-8;

// `n` values uniform in [lo, hi), the same for the same seed.
std::vector<float> RandomFloats(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
// `n` ids uniform in [0, vocab).
std::vector<int32_t> RandomIds(int64_t n, int32_t vocab, uint32_t seed);
std::vector<double> ToDouble(const std::vector<float>& values);

// The CUDA backend of a test program, made on first use and never destroyed; null, with the
// reason (no GPU, or a build without CUDA), without one.
struct CudaBackend {
  std::unique_ptr<Compute> compute;
  std::string error;
};
const CudaBackend& Cuda();

Tensor Upload(Compute& compute, std::vector<int64_t> shape, const std::vector<float>& values);
Tensor UploadIds(Compute& compute, std::vector<int64_t> shape, const std::vector<int32_t>& ids);
std::vector<float> Download(Compute& compute, const Tensor& t);

// Expects |actual[i] − expected[i]| <= tol · max(1, |expected[i]|) for every i: a relative
// tolerance for large values and an absolute one below 1.
void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected, double tol,
                const std::string& what);

// --- Reference ops, plain loops in double; matrices and rows are row-major [N, C] --------

// alpha · op(A) · op(B) + beta · C, with A stored [a_rows, a_cols] and B [b_rows, b_cols];
// also fills `bound` (if given) with the rounding error bound of an fp32 evaluation.
std::vector<double> RefGemm(bool trans_a, bool trans_b, double alpha, const std::vector<double>& a,
                            int64_t a_rows, int64_t a_cols, const std::vector<double>& b,
                            int64_t b_rows, int64_t b_cols, double beta,
                            const std::vector<double>& c, std::vector<double>* bound = nullptr);
double RefGelu(double x);
double RefSilu(double x);
// Causal rows keep columns j <= i + offset of row i of each matrix_rows × cols matrix
// (matrix_rows 0: square).
std::vector<double> RefSoftmax(const std::vector<double>& x, int64_t cols, bool causal,
                               int64_t matrix_rows = 0, int64_t offset = 0);
// The mask Compute::Softmax takes for `causal` with `offset`.
inline SoftmaxMask MaskOf(bool causal, int64_t offset = 0) {
  return causal ? SoftmaxMask::Causal(offset) : SoftmaxMask::All();
}
std::vector<double> RefLayerNorm(const std::vector<double>& x, const std::vector<double>& gamma,
                                 const std::vector<double>& beta, double eps,
                                 std::vector<double>* mean = nullptr,
                                 std::vector<double>* rstd = nullptr);
std::vector<double> RefRmsNorm(const std::vector<double>& x, const std::vector<double>& gamma,
                               double eps, std::vector<double>* rstd = nullptr);
std::vector<double> RefEmbedding(const std::vector<int32_t>& ids, const std::vector<double>& table,
                                 int64_t cols);
// Mean over rows of −log softmax(logits)[target]; fills `probs` if given.
double RefCrossEntropy(const std::vector<double>& logits, int64_t cols,
                       const std::vector<int32_t>& targets, std::vector<double>* probs = nullptr);

// Σ_i w[i] · y[i].
double Dot(const std::vector<double>& w, const std::vector<double>& y);
// Central differences (f(x + h·e_i) − f(x − h·e_i)) / 2h for every i.
std::vector<double> NumericGradient(const std::function<double(const std::vector<double>&)>& f,
                                    const std::vector<double>& x, double h = 1e-5);

}  // namespace trident
