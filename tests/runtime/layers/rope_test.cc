// RoPE pins the rotate-half convention of Hugging Face Llama against the formula of
// runtime/layers/llama_parts.h, evaluated in double.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/layers/llama_parts.h"
#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

TEST(RopeTest, RotatesPairsHalfADimensionApart) {
  constexpr int64_t kSeq = 3, kHeads = 2, kDim = 4;
  constexpr double kTheta = 100.0;
  CpuCompute compute;
  std::vector<float> x = RandomValues(kSeq * kHeads * kDim, 1.0f, 1);
  Tensor t = FromHost(compute, {1, kSeq, kHeads * kDim}, x);
  RopeForward(
      compute,
      MakeRopeTables(compute, {1, kSeq, kHeads, kDim}, {0, 1, 2}, kTheta, ElementType::kFp32),
      MakeRotateHalf(compute, kDim, ElementType::kFp32), t);
  std::vector<float> y = ToHost(compute, t);
  for (int64_t p = 0; p < kSeq; ++p) {
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t base = (p * kHeads + h) * kDim;
      for (int64_t j = 0; j < kDim / 2; ++j) {
        const double angle = static_cast<double>(p) * std::pow(kTheta, -2.0 * j / kDim);
        const double a = x[base + j], b = x[base + j + kDim / 2];
        EXPECT_NEAR(y[base + j], a * std::cos(angle) - b * std::sin(angle), 1e-6);
        EXPECT_NEAR(y[base + j + kDim / 2], b * std::cos(angle) + a * std::sin(angle), 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace trident
