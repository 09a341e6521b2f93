// AdamW and SGD: two steps worked by hand, and longer runs against a double-precision loop.
#include <gtest/gtest.h>

#include <cmath>

#include "compute_test_util.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

// One element, lr 0.1, β1 0.9, β2 0.999, eps 1e-8, weight decay 0.01, p = 1:
//  step 1, g = 0.5:  m = 0.05, v = 0.00025, m̂ = 0.05/0.1 = 0.5, v̂ = 0.00025/0.001 = 0.25,
//    p = 1 − 0.1·(0.5/(0.5 + 1e-8) + 0.01·1) = 1 − 0.1·1.00999998 = 0.899000002.
//  step 2, g = −0.25: m = 0.045 − 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
//    m̂ = 0.02/0.19 = 0.105263158, v̂ = 0.00031225/0.001999 = 0.156203102, √v̂ = 0.395225381,
//    p = 0.899000002 − 0.1·(0.10526316/0.39522538 + 0.01·0.899) = 0.899 − 0.1·(0.266337 +
//    0.00899) = 0.8714673.
// Tolerances: the fp32 constants are inexact (1 − 0.999f = 0.00099998713, 1.3e-5 relative
// off), so v carries a relative error of ~1.3e-5 and m of ~1e-7 (1 − 0.9f); p moves by
// lr·(1 + O(1e-5)), within 1e-6.
TEST(OptimizerTest, AdamWTwoStepsByHand) {
  CpuCompute compute;
  Tensor param = Upload(compute, {1}, {1.0f});
  Tensor grad = Upload(compute, {1}, {0.5f});
  Tensor m = compute.Allocate({1}), v = compute.Allocate({1});
  const AdamWConfig config{.lr = 0.1f, .weight_decay = 0.01f};
  compute.AdamW(config, 1, grad, param, m, v);
  EXPECT_NEAR(Download(compute, param)[0], 0.899000002, 1e-7);
  EXPECT_NEAR(Download(compute, m)[0], 0.05, 1e-7);
  EXPECT_NEAR(Download(compute, v)[0], 0.00025, 1e-8);
  compute.CopyFromHost(std::vector<float>{-0.25f}, grad);
  compute.AdamW(config, 2, grad, param, m, v);
  EXPECT_NEAR(Download(compute, m)[0], 0.02, 1e-7);
  EXPECT_NEAR(Download(compute, v)[0], 0.00031225, 1e-8);
  EXPECT_NEAR(Download(compute, param)[0], 0.8714673, 1e-6);
}

// Tolerance 1e-6 on parameters of size O(1): each step changes p by about lr = 1e-2 through
// a handful of fp32 operations (relative error ~1e-6 of the step, 1e-8 of p).
TEST(OptimizerTest, AdamWMatchesReferenceOverSteps) {
  CpuCompute compute;
  const int64_t n = 1000;  // odd chunking across the flat buffer
  const AdamWConfig config{
      .lr = 1e-2f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.1f};
  std::vector<double> p = ToDouble(RandomFloats(n, 1)), m(n, 0.0), v(n, 0.0);
  Tensor param = Upload(compute, {n}, RandomFloats(n, 1));
  Tensor m_t = compute.Allocate({n}), v_t = compute.Allocate({n});
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> g = RandomFloats(n, 100 + static_cast<uint32_t>(step));
    Tensor grad = Upload(compute, {n}, g);
    compute.AdamW(config, step, grad, param, m_t, v_t);
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = config.beta1 * m[i] + (1 - double{config.beta1}) * g[i];
      v[i] = config.beta2 * v[i] + (1 - double{config.beta2}) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(double{config.beta1}, step));
      const double v_hat = v[i] / (1 - std::pow(double{config.beta2}, step));
      p[i] -= config.lr * (m_hat / (std::sqrt(v_hat) + config.eps) + config.weight_decay * p[i]);
    }
  }
  ExpectNear(Download(compute, param), p, 1e-6, "AdamW param");
}

// p = 1, g = 0.5, lr 0.1, momentum 0.9, weight decay 0.1:
//  step 1: g' = 0.5 + 0.1 = 0.6, buf = 0.6, p = 1 − 0.06 = 0.94.
//  step 2: g' = 0.5 + 0.094 = 0.594, buf = 0.54 + 0.594 = 1.134, p = 0.94 − 0.1134 = 0.8266.
TEST(OptimizerTest, SgdWithMomentumByHand) {
  CpuCompute compute;
  Tensor param = Upload(compute, {1}, {1.0f});
  Tensor grad = Upload(compute, {1}, {0.5f});
  Tensor buf = compute.Allocate({1});
  const SgdConfig config{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.1f};
  compute.Sgd(config, grad, param, buf);
  EXPECT_NEAR(Download(compute, param)[0], 0.94, 1e-7);
  compute.Sgd(config, grad, param, buf);
  EXPECT_NEAR(Download(compute, buf)[0], 1.134, 1e-6);
  EXPECT_NEAR(Download(compute, param)[0], 0.8266, 1e-6);
}

TEST(OptimizerTest, SgdWithoutMomentumNeedsNoBuffer) {
  CpuCompute compute;
  Tensor param = Upload(compute, {3}, {1.0f, -2.0f, 0.5f});
  Tensor grad = Upload(compute, {3}, {0.5f, 0.25f, -1.0f});
  Tensor no_buffer;
  compute.Sgd(SgdConfig{.lr = 0.5f, .momentum = 0.0f, .weight_decay = 0.0f}, grad, param,
              no_buffer);
  ExpectNear(Download(compute, param), {0.75, -2.125, 1.0}, 1e-7, "SGD param");
}

}  // namespace
}  // namespace trident
