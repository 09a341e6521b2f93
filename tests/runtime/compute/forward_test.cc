// Every forward op of CpuCompute against a double-precision loop on small odd shapes
// (rows of 13 columns, batches of 2).
//
// Tolerance 1e-5 (relative above 1, absolute below): each output is a handful of fp32
// operations on inputs in [-1, 1] plus, for the row ops, a sum over C <= 13 terms, so its
// rounding error is a few times C·u ≈ 13 · 6e-8 ≈ 8e-7; Eigen's vectorized exp, tanh and
// logistic add a few ulps more. A wrong formula is off by far more than 1e-5.
#include <gtest/gtest.h>

#include <cmath>

#include "compute_test_util.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

constexpr double kTol = 1e-5;

TEST(ForwardTest, FlatElementwiseOps) {
  CpuCompute compute;
  const std::vector<float> a = RandomFloats(91, 1), b = RandomFloats(91, 2);
  Tensor a_t = Upload(compute, {7, 13}, a);
  Tensor b_t = Upload(compute, {91}, b);  // elementwise ops compare element counts only
  Tensor out = compute.Allocate({7, 13});
  std::vector<double> sum(91), product(91), axpy(91), scaled(91);
  for (size_t i = 0; i < 91; ++i) {
    sum[i] = double{a[i]} + b[i];
    product[i] = double{a[i]} * b[i];
    axpy[i] = product[i] - 2.5 * a[i];
    scaled[i] = axpy[i] * 0.25;
  }
  compute.Add(a_t, b_t, out);
  ExpectNear(Download(compute, out), sum, kTol, "Add");
  compute.Mul(a_t, b_t, out);
  ExpectNear(Download(compute, out), product, kTol, "Mul");
  compute.Axpy(-2.5f, a_t, out);
  ExpectNear(Download(compute, out), axpy, kTol, "Axpy");
  compute.Scale(0.25f, out);
  ExpectNear(Download(compute, out), scaled, kTol, "Scale");
  compute.Add(a_t, b_t, a_t);  // out aliasing an input
  ExpectNear(Download(compute, a_t), sum, kTol, "Add in place");
  compute.Copy(b_t, out);
  EXPECT_EQ(Download(compute, out), b);
}

TEST(ForwardTest, BiasAddAndColumnSums) {
  CpuCompute compute;
  const std::vector<float> y = RandomFloats(2 * 3 * 13, 3), bias = RandomFloats(13, 4);
  Tensor y_BSC = Upload(compute, {2, 3, 13}, y);
  Tensor bias_C = Upload(compute, {13}, bias);
  compute.AddBias(bias_C, y_BSC);
  std::vector<double> expected(y.size());
  for (size_t i = 0; i < y.size(); ++i) expected[i] = double{y[i]} + bias[i % 13];
  ExpectNear(Download(compute, y_BSC), expected, kTol, "AddBias");

  Tensor dbias_C = Upload(compute, {13}, bias);  // BiasGrad accumulates
  compute.BiasGrad(y_BSC, dbias_C);
  std::vector<double> sums = ToDouble(bias);
  for (size_t i = 0; i < expected.size(); ++i) sums[i % 13] += expected[i];
  ExpectNear(Download(compute, dbias_C), sums, kTol, "BiasGrad");
}

TEST(ForwardTest, Activations) {
  CpuCompute compute;
  const std::vector<float> x = RandomFloats(2 * 7 * 13, 5, -4.0f, 4.0f);
  const std::vector<float> up = RandomFloats(x.size(), 6);
  Tensor x_t = Upload(compute, {2, 7, 13}, x);
  Tensor up_t = Upload(compute, {2, 7, 13}, up);
  Tensor y_t = compute.Allocate({2, 7, 13});
  std::vector<double> gelu, silu, swiglu;
  for (size_t i = 0; i < x.size(); ++i) {
    gelu.push_back(RefGelu(x[i]));
    silu.push_back(RefSilu(x[i]));
    swiglu.push_back(RefSilu(x[i]) * up[i]);
  }
  compute.Activation(ActivationKind::kGelu, x_t, y_t);
  ExpectNear(Download(compute, y_t), gelu, kTol, "Gelu");
  compute.Activation(ActivationKind::kSilu, x_t, y_t);
  ExpectNear(Download(compute, y_t), silu, kTol, "Silu");
  compute.SwiGlu(x_t, up_t, y_t);
  ExpectNear(Download(compute, y_t), swiglu, kTol, "SwiGlu");
  compute.Activation(ActivationKind::kGelu, x_t, x_t);  // in place
  ExpectNear(Download(compute, x_t), gelu, kTol, "Gelu in place");
}

TEST(ForwardTest, SoftmaxPlainAndCausal) {
  CpuCompute compute;
  const std::vector<float> x = RandomFloats(2 * 3 * 5 * 5, 7, -3.0f, 3.0f);
  Tensor x_t = Upload(compute, {2, 3, 5, 5}, x);
  Tensor y_t = compute.Allocate({2, 3, 5, 5});
  for (bool causal : {false, true}) {
    compute.Softmax(x_t, MaskOf(causal), y_t);
    ExpectNear(Download(compute, y_t), RefSoftmax(ToDouble(x), 5, causal), kTol,
               causal ? "causal softmax" : "softmax");
  }
  // A block of 4 query rows at positions 5..8 against keys 0..8 (a context-parallel chunk).
  const std::vector<float> block = RandomFloats(2 * 3 * 4 * 9, 9, -3.0f, 3.0f);
  Tensor block_t = Upload(compute, {2, 3, 4, 9}, block);
  compute.Softmax(block_t, SoftmaxMask::Causal(5), block_t);
  ExpectNear(Download(compute, block_t), RefSoftmax(ToDouble(block), 9, true, 4, 5), kTol,
             "causal softmax with offset");
  const std::vector<float> wide = RandomFloats(3 * 13, 8, -3.0f, 3.0f);  // non-square rows
  Tensor wide_t = Upload(compute, {3, 13}, wide);
  compute.Softmax(wide_t, SoftmaxMask::All(), wide_t);
  ExpectNear(Download(compute, wide_t), RefSoftmax(ToDouble(wide), 13, false), kTol,
             "softmax in place");
}

TEST(ForwardTest, LayerNormAndRmsNormSaveStatistics) {
  CpuCompute compute;
  const std::vector<float> x = RandomFloats(2 * 3 * 13, 9, -2.0f, 3.0f);
  const std::vector<float> gamma = RandomFloats(13, 10), beta = RandomFloats(13, 11);
  Tensor x_t = Upload(compute, {2, 3, 13}, x);
  Tensor gamma_t = Upload(compute, {13}, gamma), beta_t = Upload(compute, {13}, beta);
  Tensor y_t = compute.Allocate({2, 3, 13});
  Tensor mean_t = compute.Allocate({2, 3}), rstd_t = compute.Allocate({2, 3});
  std::vector<double> mean, rstd;
  compute.LayerNorm(x_t, gamma_t, beta_t, 1e-5f, y_t, mean_t, rstd_t);
  const std::vector<double> ln =
      RefLayerNorm(ToDouble(x), ToDouble(gamma), ToDouble(beta), 1e-5, &mean, &rstd);
  ExpectNear(Download(compute, y_t), ln, kTol, "LayerNorm y");
  ExpectNear(Download(compute, mean_t), mean, kTol, "LayerNorm mean");
  ExpectNear(Download(compute, rstd_t), rstd, kTol, "LayerNorm rstd");

  rstd.clear();
  compute.RmsNorm(x_t, gamma_t, 1e-6f, y_t, rstd_t);
  const std::vector<double> rms = RefRmsNorm(ToDouble(x), ToDouble(gamma), 1e-6, &rstd);
  ExpectNear(Download(compute, y_t), rms, kTol, "RmsNorm y");
  ExpectNear(Download(compute, rstd_t), rstd, kTol, "RmsNorm rstd");
}

TEST(ForwardTest, EmbeddingGather) {
  CpuCompute compute;
  const int64_t vocab = 11, cols = 13;
  const std::vector<float> table = RandomFloats(vocab * cols, 12);
  const std::vector<int32_t> ids = {3, 0, 10, 3, 7, 1};
  Tensor table_VC = Upload(compute, {vocab, cols}, table);
  Tensor ids_BS = UploadIds(compute, {2, 3}, ids);
  Tensor out_BSC = compute.Allocate({2, 3, cols});
  compute.Embedding(ids_BS, table_VC, out_BSC);
  ExpectNear(Download(compute, out_BSC), RefEmbedding(ids, ToDouble(table), cols), 0.0,
             "Embedding");  // a copy: exact
}

TEST(ForwardTest, CrossEntropyLossAndProbabilities) {
  CpuCompute compute;
  const int64_t rows = 7, vocab = 13;
  const std::vector<float> logits = RandomFloats(rows * vocab, 13, -5.0f, 5.0f);
  const std::vector<int32_t> targets = RandomIds(rows, vocab, 14);
  Tensor logits_NV = Upload(compute, {rows, vocab}, logits);
  Tensor targets_N = UploadIds(compute, {rows}, targets);
  Tensor probs_NV = compute.Allocate({rows, vocab});
  Tensor loss_1 = compute.Allocate({1});
  compute.CrossEntropy(logits_NV, targets_N, probs_NV, loss_1);
  std::vector<double> probs;
  const double loss = RefCrossEntropy(ToDouble(logits), vocab, targets, &probs);
  ExpectNear(Download(compute, loss_1), {loss}, kTol, "CrossEntropy loss");
  ExpectNear(Download(compute, probs_NV), probs, kTol, "CrossEntropy probs");
  compute.CrossEntropy(logits_NV, targets_N, logits_NV, loss_1);  // probs over the logits
  ExpectNear(Download(compute, loss_1), {loss}, kTol, "CrossEntropy loss in place");
  ExpectNear(Download(compute, logits_NV), probs, kTol, "CrossEntropy probs in place");
}

// Row, column and flat ops give the same bits however many threads split them; GEMM may
// not (cpu_compute.h), so it is left out here and checked per thread count in gemm_test.
TEST(ForwardTest, ThreadCountDoesNotChangeBits) {
  CpuCompute one;
  CpuCompute three(CpuComputeOptions{.threads = 3});
  const int64_t rows = 96, cols = 1000;
  const std::vector<float> x = RandomFloats(rows * cols, 15), g = RandomFloats(cols, 16);
  const std::vector<int32_t> ids = RandomIds(rows, 50, 17);
  auto run = [&](Compute& compute) {
    Tensor x_t = Upload(compute, {rows, cols}, x), g_t = Upload(compute, {cols}, g);
    Tensor y = compute.Allocate({rows, cols}), mean = compute.Allocate({rows});
    Tensor rstd = compute.Allocate({rows}), dg = compute.Allocate({cols});
    Tensor db = compute.Allocate({cols}), dx = compute.Allocate({rows, cols});
    Tensor table = compute.Allocate({50, cols}), ids_t = UploadIds(compute, {rows}, ids);
    compute.LayerNorm(x_t, g_t, g_t, 1e-5f, y, mean, rstd);
    compute.LayerNormBackward(x_t, g_t, mean, rstd, y, dx, dg, db);
    compute.Activation(ActivationKind::kGelu, dx, dx);
    compute.Softmax(dx, SoftmaxMask::All(), y);
    compute.EmbeddingBackward(ids_t, y, table);
    std::vector<float> all = Download(compute, table);
    for (const Tensor* t : {&dx, &dg, &db}) {
      const std::vector<float> part = Download(compute, *t);
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  };
  EXPECT_EQ(run(one), run(three));
}

}  // namespace
}  // namespace trident
