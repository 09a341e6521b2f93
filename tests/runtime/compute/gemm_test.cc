// Gemm and GemmStridedBatched against a double-precision loop. Tolerance: the rounding error
// bound (K + 3)·u·(|α|·Σ_k|a_ik·b_kj| + |β·c_ij|) of an fp32 evaluation in any summation
// order (RefGemm computes it per element), so a wrong term anywhere fails.
//
// Shape legend: B sequences, S tokens, A attention heads, D head size, H hidden (A·D),
// F output features.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compute_test_util.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

// Expects |actual − expected| <= bound + 1e-30 elementwise.
void ExpectWithinBound(const std::vector<float>& actual, const std::vector<double>& expected,
                       const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_LE(std::abs(actual[i] - expected[i]), bound[i] + 1e-30)
        << what << " element " << i << ": got " << actual[i] << ", expected " << expected[i];
  }
}

struct GemmCase {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
};

class GemmTest : public ::testing::TestWithParam<int> {};  // the parameter: threads

TEST_P(GemmTest, MatchesReferenceForTransposesAndOddSizes) {
  CpuCompute compute(CpuComputeOptions{.threads = GetParam()});
  const GemmCase cases[] = {
      {7, 5, 13, false, false, 1.0f, 0.0f},   {7, 5, 13, true, false, 0.5f, 1.0f},
      {7, 5, 13, false, true, -2.0f, 0.25f},  {7, 5, 13, true, true, 1.5f, -1.0f},
      {1, 1, 1, false, false, 1.0f, 0.0f},    {1, 9, 33, true, true, 1.0f, 1.0f},
      {65, 3, 17, false, true, 1.0f, 0.0f},   {37, 41, 0, false, false, 1.0f, 0.5f},
      {200, 130, 90, true, false, 1.0f, 1.0f}};  // big enough to split rows across threads
  uint32_t seed = 1;
  for (const GemmCase& g : cases) {
    const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
    const int64_t b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
    const std::vector<float> a = RandomFloats(a_rows * a_cols, seed++);
    const std::vector<float> b = RandomFloats(b_rows * b_cols, seed++);
    const std::vector<float> c = RandomFloats(g.m * g.n, seed++);
    Tensor a_t = Upload(compute, {a_rows, a_cols}, a);
    Tensor b_t = Upload(compute, {b_rows, b_cols}, b);
    Tensor c_t = Upload(compute, {g.m, g.n}, c);
    compute.Gemm(g.trans_a, g.trans_b, g.alpha, a_t, b_t, g.beta, c_t);
    std::vector<double> bound;
    const std::vector<double> expected =
        RefGemm(g.trans_a, g.trans_b, g.alpha, ToDouble(a), a_rows, a_cols, ToDouble(b), b_rows,
                b_cols, g.beta, ToDouble(c), &bound);
    ExpectWithinBound(Download(compute, c_t), expected, bound,
                      "m" + std::to_string(g.m) + " n" + std::to_string(g.n) + " k" +
                          std::to_string(g.k) + " ta" + std::to_string(g.trans_a) + " tb" +
                          std::to_string(g.trans_b));
  }
}

TEST_P(GemmTest, FoldsLeadingDimensionsAndIgnoresNanWhenBetaIsZero) {
  CpuCompute compute(CpuComputeOptions{.threads = GetParam()});
  const std::vector<float> x = RandomFloats(2 * 3 * 13, 11);
  const std::vector<float> w = RandomFloats(13 * 7, 12);
  Tensor x_BSH = Upload(compute, {2, 3, 13}, x);
  Tensor w_HF = Upload(compute, {13, 7}, w);
  Tensor y_BSF = compute.Allocate({2, 3, 7});
  compute.Fill(std::numeric_limits<float>::quiet_NaN(), y_BSF);
  compute.Gemm(false, false, 1.0f, x_BSH, w_HF, 0.0f, y_BSF);
  std::vector<double> bound;
  const std::vector<double> expected = RefGemm(false, false, 1.0, ToDouble(x), 6, 13, ToDouble(w),
                                               13, 7, 0.0, std::vector<double>(42), &bound);
  ExpectWithinBound(Download(compute, y_BSF), expected, bound, "x_BSH · w_HF");
}

// An attention activation qkv_BS3H: B sequences of S tokens, each token holding its queries,
// keys and values for H heads of D dimensions.
constexpr int64_t kB = 2, kS = 5, kA = 3, kD = 4, kH = kA * kD;

// Part 0 (Q), 1 (K) or 2 (V) of head h of sequence b, as a packed [S, D] matrix.
std::vector<double> HeadMatrix(const std::vector<float>& qkv, int64_t b, int64_t part, int64_t h) {
  std::vector<double> matrix;
  for (int64_t s = 0; s < kS; ++s) {
    const int64_t row = ((b * kS + s) * 3 + part) * kH + h * kD;
    matrix.insert(matrix.end(), qkv.begin() + row, qkv.begin() + row + kD);
  }
  return matrix;
}

// scores_BASS[b, h] = ½ · q_bh · k_bhᵀ straight out of qkv_BS3H: one batched call per
// sequence, the heads as the batch, no permute.
TEST_P(GemmTest, StridedBatchReadsHeadsInPlace) {
  CpuCompute compute(CpuComputeOptions{.threads = GetParam()});
  const std::vector<float> qkv = RandomFloats(kB * kS * 3 * kH, 21);
  Tensor qkv_BS3H = Upload(compute, {kB, kS, 3 * kH}, qkv);
  Tensor scores_BASS = compute.Allocate({kB, kA, kS, kS});
  for (int64_t b = 0; b < kB; ++b) {
    const MatrixLayout q{
        .offset = b * kS * 3 * kH, .rows = kS, .cols = kD, .ld = 3 * kH, .stride = kD};
    MatrixLayout k = q;
    k.offset += kH;
    const MatrixLayout scores{
        .offset = b * kA * kS * kS, .rows = kS, .cols = kS, .ld = kS, .stride = kS * kS};
    const BatchedGemm gemm{
        .batch = kA, .trans_b = true, .alpha = 0.5f, .a = q, .b = k, .c = scores};
    compute.GemmStridedBatched(gemm, qkv_BS3H, qkv_BS3H, scores_BASS);
  }
  const std::vector<float> got = Download(compute, scores_BASS);
  for (int64_t bh = 0; bh < kB * kA; ++bh) {
    std::vector<double> bound;
    const std::vector<double> expected =
        RefGemm(false, true, 0.5, HeadMatrix(qkv, bh / kA, 0, bh % kA), kS, kD,
                HeadMatrix(qkv, bh / kA, 1, bh % kA), kS, kD, 0.0, {}, &bound);
    ExpectWithinBound(
        std::vector<float>(got.begin() + bh * kS * kS, got.begin() + (bh + 1) * kS * kS), expected,
        bound, "sequence·head " + std::to_string(bh));
  }
}

TEST_P(GemmTest, StridedBatchOfPackedMatricesWithTransposes) {
  CpuCompute compute(CpuComputeOptions{.threads = GetParam()});
  const int64_t batch = 4, m = 6, n = 9, k = 11;
  const std::vector<float> a = RandomFloats(batch * k * m, 31);  // A_i stored [k, m]
  const std::vector<float> b = RandomFloats(batch * n * k, 32);  // B_i stored [n, k]
  const std::vector<float> c = RandomFloats(batch * m * n, 33);
  Tensor a_t = Upload(compute, {batch, k, m}, a);
  Tensor b_t = Upload(compute, {batch, n, k}, b);
  Tensor c_t = Upload(compute, {batch, m, n}, c);
  const BatchedGemm gemm{.batch = batch,
                         .trans_a = true,
                         .trans_b = true,
                         .alpha = 1.0f,
                         .beta = 1.0f,
                         .a = {.rows = k, .cols = m, .ld = m, .stride = k * m},
                         .b = {.rows = n, .cols = k, .ld = k, .stride = n * k},
                         .c = {.rows = m, .cols = n, .ld = n, .stride = m * n}};
  compute.GemmStridedBatched(gemm, a_t, b_t, c_t);
  const std::vector<float> got = Download(compute, c_t);
  for (int64_t i = 0; i < batch; ++i) {
    auto slice = [i](const std::vector<float>& v, int64_t size) {
      return std::vector<double>(v.begin() + i * size, v.begin() + (i + 1) * size);
    };
    std::vector<double> bound;
    const std::vector<double> expected =
        RefGemm(true, true, 1.0, slice(a, k * m), k, m, slice(b, n * k), n, k, 1.0, slice(c, m * n),
                &bound);
    ExpectWithinBound(std::vector<float>(got.begin() + i * m * n, got.begin() + (i + 1) * m * n),
                      expected, bound, "batch entry " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, GemmTest, ::testing::Values(1, 3));

}  // namespace
}  // namespace trident
