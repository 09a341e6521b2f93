// Finite-difference checks of every layer's input and weight gradients (tp 1), and of weight
// gradients accumulating over micro-batches.
//
// Objective: J = Σ_i w_i·y_i over the layer's outputs, summed in double, with fixed random
// weights w in [-1, 1]; BackwardInput gets dy = w. Central differences
// (J(θ + ε) − J(θ − ε)) / 2ε with ε = 1e-2 on a small shape (B 2, S 4, H 8).
// Tolerance |fd − analytic| ≤ 2e-3 + 2e-2·|analytic|, from fp32 error: each output carries a
// relative rounding error of a few 1e-7 times the depth of the layer (tens of ops), so J, a
// sum of ~64 terms of size ~1, is off by ~1e-5; divided by 2ε that is ~1e-3 in fd. The
// truncation error ε²·J'''/6 is ~1e-5 for the O(1) derivatives these inputs give. A wrong
// gradient (a missing term, a transposed product) is off by O(|analytic|), far above this.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <span>
#include <string>

#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

constexpr double kEps = 1e-2;
constexpr int kSamplesPerTensor = 16;
constexpr int kProbeMicroBatch = 99;

class LayerProbe {
 public:
  explicit LayerProbe(const LayerCase& c) {
    model_ = c.llama ? SmallLlama() : SmallGpt();
    if (!c.llama) model_.norm = c.norm;
    LayerContext context{&compute_, nullptr, 0, 1, 7, 3, c.recompute};
    layer_ = MakeLayer(model_, c.kind, context);
    PerturbParameters(compute_, *layer_, 11);
    input_ = MakeInput(model_, c.kind, 2, 4, 5);
    targets_ = IdsFromHost(compute_, {2, 4}, RandomIds(8, model_.vocab_size, 6));
    Tensor y = layer_->Forward(kProbeMicroBatch, ToTensor(compute_, input_), &targets_);
    output_shape_ = y.shape();
    weights_ = RandomValues(y.numel(), 1.0f, 8);
    layer_->Discard(kProbeMicroBatch);
  }

  double Objective() {
    Tensor y = layer_->Forward(kProbeMicroBatch, ToTensor(compute_, input_), &targets_);
    std::vector<float> v = ToHost(compute_, y);
    layer_->Discard(kProbeMicroBatch);
    double j = 0;
    for (size_t i = 0; i < v.size(); ++i) j += static_cast<double>(weights_[i]) * v[i];
    return j;
  }

  // Runs forward and both backward halves for micro-batch `mb`; returns dx on the host.
  std::vector<float> Backward(int mb) {
    layer_->Forward(mb, ToTensor(compute_, input_), &targets_);
    Tensor dx = layer_->BackwardInput(mb, FromHost(compute_, output_shape_, weights_));
    layer_->BackwardWeight(mb);
    EXPECT_EQ(layer_->StashBytes(mb), 0);
    return dx.defined() ? ToHost(compute_, dx) : std::vector<float>();
  }

  // Central difference of J in the value that `get` returns by reference.
  template <typename Set>
  double Difference(float original, Set set) {
    set(static_cast<float>(original + kEps));
    double plus = Objective();
    set(static_cast<float>(original - kEps));
    double minus = Objective();
    set(original);
    return (plus - minus) / (2 * kEps);
  }

  CpuCompute compute_;
  ModelSpec model_;
  std::unique_ptr<Layer> layer_;
  LayerInput input_;
  Tensor targets_;
  std::vector<int64_t> output_shape_;
  std::vector<float> weights_;
};

void ExpectClose(double fd, double analytic, const std::string& what) {
  EXPECT_LE(std::abs(fd - analytic), 2e-3 + 2e-2 * std::abs(analytic))
      << what << ": finite difference " << fd << " vs analytic " << analytic;
}

std::vector<size_t> Samples(size_t n) {
  std::vector<size_t> out;
  for (size_t k = 0; k < std::min<size_t>(n, kSamplesPerTensor); ++k) {
    out.push_back(k * n / std::min<size_t>(n, kSamplesPerTensor));
  }
  return out;
}

class GradientTest : public testing::TestWithParam<LayerCase> {};

TEST_P(GradientTest, InputGradientMatchesFiniteDifferences) {
  LayerProbe probe(GetParam());
  std::vector<float> dx = probe.Backward(0);
  if (probe.input_.ids) {
    EXPECT_TRUE(dx.empty());
    return;
  }
  ASSERT_EQ(dx.size(), probe.input_.values.size());
  for (size_t i : Samples(dx.size())) {
    float& value = probe.input_.values[i];
    double fd = probe.Difference(value, [&](float v) { value = v; });
    ExpectClose(fd, dx[i], "dx[" + std::to_string(i) + "]");
  }
}

TEST_P(GradientTest, WeightGradientsMatchFiniteDifferences) {
  LayerProbe probe(GetParam());
  probe.Backward(0);
  Compute& compute = probe.compute_;
  for (const Parameter& p : probe.layer_->Parameters()) {
    std::vector<float> grad = ToHost(compute, *p.grad);
    std::vector<float> value = ToHost(compute, *p.value);
    for (size_t i : Samples(value.size())) {
      double fd = probe.Difference(value[i], [&](float v) {
        value[i] = v;
        compute.CopyFromHost(std::span<const float>(value), *p.value);
      });
      ExpectClose(fd, grad[i], p.name + "[" + std::to_string(i) + "]");
    }
  }
}

// Two micro-batches in flight, in zero-bubble order (F F B B W W), sum their gradients: the
// accumulated grads equal the sum of each micro-batch's own, up to fp32 summation order.
TEST_P(GradientTest, WeightGradientsAccumulateOverMicroBatches) {
  LayerProbe probe(GetParam());
  Compute& compute = probe.compute_;
  Layer& layer = *probe.layer_;
  LayerInput first = probe.input_;
  LayerInput second = MakeInput(probe.model_, GetParam().kind, 2, 4, 21);
  std::vector<std::vector<float>> expected;
  for (const Parameter& p : layer.Parameters()) expected.emplace_back(p.grad->numel(), 0.0f);
  for (const LayerInput* in : {&first, &second}) {
    probe.input_ = *in;
    ZeroGrads(compute, layer);
    probe.Backward(0);
    std::vector<Parameter> params = layer.Parameters();
    for (size_t k = 0; k < params.size(); ++k) {
      std::vector<float> g = ToHost(compute, *params[k].grad);
      for (size_t i = 0; i < g.size(); ++i) expected[k][i] += g[i];
    }
  }
  ZeroGrads(compute, layer);
  Tensor dy1 = FromHost(compute, probe.output_shape_, probe.weights_);
  Tensor dy2 = FromHost(compute, probe.output_shape_, probe.weights_);
  layer.Forward(1, ToTensor(compute, first), &probe.targets_);
  layer.Forward(2, ToTensor(compute, second), &probe.targets_);
  layer.BackwardInput(1, std::move(dy1));
  layer.BackwardInput(2, std::move(dy2));
  layer.BackwardWeight(1);
  layer.BackwardWeight(2);
  std::vector<Parameter> params = layer.Parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<float> g = ToHost(compute, *params[k].grad);
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_NEAR(g[i], expected[k][i], 1e-5 * (1 + std::abs(expected[k][i]))) << params[k].name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, GradientTest, testing::ValuesIn(AllLayerCases()),
                         [](const testing::TestParamInfo<LayerCase>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace trident
