// The elementwise maps (compute_maps.h) as a GPU thread runs them, one float at a time in
// registers, checked on the host against CpuCompute's public ops, which run the same maps on
// Eigen blocks. So the math every backend shares is tested on both of its value types here,
// without a GPU; cuda_ops_test checks the CUDA kernels around it where there is one.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "compute_test_util.h"
#include "runtime/compute/compute_maps.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

// 1,000 elements: several CPU blocks and a partial one.
constexpr int64_t kElements = 1000;

struct MapCase {
  std::string name;
  MapOp op;
  // The public method over the operands, in the map's order.
  std::function<void(Compute&, std::vector<Tensor>&)> run;
  float lo = -3.0f;  // operands are uniform in [lo, 3)
};

void PrintTo(const MapCase& c, std::ostream* os) { *os << c.name; }

std::vector<MapCase> Cases() {
  const AdamWConfig adamw{.lr = 1e-2f, .weight_decay = 0.1f};
  const SgdConfig sgd{.lr = 5e-2f, .momentum = 0.9f, .weight_decay = 0.01f};
  const auto correction = [](float beta) { return 1.0f - beta * beta * beta; };  // step 3
  return {
      {"Fill", FillMap{0.25f}, [](Compute& c, std::vector<Tensor>& t) { c.Fill(0.25f, t[0]); }},
      {"Add", AddMap{}, [](Compute& c, std::vector<Tensor>& t) { c.Add(t[0], t[1], t[2]); }},
      {"Mul", MulMap{}, [](Compute& c, std::vector<Tensor>& t) { c.Mul(t[0], t[1], t[2]); }},
      {"Axpy", AxpyMap{-0.5f},
       [](Compute& c, std::vector<Tensor>& t) { c.Axpy(-0.5f, t[0], t[1]); }},
      {"Scale", ScaleMap{3.0f}, [](Compute& c, std::vector<Tensor>& t) { c.Scale(3.0f, t[0]); }},
      {"Gelu", GeluMap{},
       [](Compute& c, std::vector<Tensor>& t) { c.Activation(ActivationKind::kGelu, t[0], t[1]); }},
      {"GeluGrad", GeluGradMap{},
       [](Compute& c, std::vector<Tensor>& t) {
         c.ActivationBackward(ActivationKind::kGelu, t[0], t[1], t[2]);
       }},
      {"Silu", SiluMap{},
       [](Compute& c, std::vector<Tensor>& t) { c.Activation(ActivationKind::kSilu, t[0], t[1]); }},
      {"SiluGrad", SiluGradMap{},
       [](Compute& c, std::vector<Tensor>& t) {
         c.ActivationBackward(ActivationKind::kSilu, t[0], t[1], t[2]);
       }},
      {"SwiGlu", SwiGluMap{},
       [](Compute& c, std::vector<Tensor>& t) { c.SwiGlu(t[0], t[1], t[2]); }},
      {"SwiGluGrad", SwiGluGradMap{},
       [](Compute& c, std::vector<Tensor>& t) { c.SwiGluBackward(t[0], t[1], t[2], t[3], t[4]); }},
      {"AdamW", AdamWMap{adamw, correction(adamw.beta1), correction(adamw.beta2)},
       [adamw](Compute& c, std::vector<Tensor>& t) { c.AdamW(adamw, 3, t[0], t[1], t[2], t[3]); },
       0.0f},  // v >= 0
      {"Sgd", SgdMap{sgd},
       [sgd](Compute& c, std::vector<Tensor>& t) {
         Tensor none;
         c.Sgd(SgdConfig{.lr = sgd.lr, .weight_decay = sgd.weight_decay}, t[0], t[1], none);
       }},
      {"SgdMomentum", SgdMomentumMap{sgd},
       [sgd](Compute& c, std::vector<Tensor>& t) { c.Sgd(sgd, t[0], t[1], t[2]); }},
  };
}

// Runs `op` element by element on float values, as a GPU thread does.
std::vector<std::vector<float>> RunOnFloats(const MapOp& op, std::vector<std::vector<float>> in) {
  std::visit(
      [&](const auto& map) {
        using Op = std::decay_t<decltype(map)>;
        for (int64_t i = 0; i < kElements; ++i) {
          float x[Op::kOperands];
          for (int k = 0; k < Op::kOperands; ++k) x[k] = (Op::kReads >> k) & 1u ? in[k][i] : 0.0f;
          map(x);
          for (int k = 0; k < Op::kOperands; ++k) {
            if ((Op::kWrites >> k) & 1u) in[k][i] = x[k];
          }
        }
      },
      op);
  return in;
}

class MapTest : public ::testing::TestWithParam<MapCase> {};

TEST_P(MapTest, FloatPathMatchesCpuCompute) {
  const MapCase& c = GetParam();
  const int operands = std::visit([](const auto& map) { return map.kOperands; }, c.op);
  std::vector<std::vector<float>> values;
  for (int k = 0; k < operands; ++k) {
    values.push_back(RandomFloats(kElements, 100 + static_cast<uint32_t>(k), c.lo, 3.0f));
  }
  const std::vector<std::vector<float>> expected = RunOnFloats(c.op, values);

  CpuCompute cpu;
  std::vector<Tensor> tensors;
  for (const std::vector<float>& v : values) tensors.push_back(Upload(cpu, {kElements}, v));
  c.run(cpu, tensors);
  for (int k = 0; k < operands; ++k) {
    // Eigen's vectorized tanh and logistic are within a few ulp of the C library's.
    ExpectNear(Download(cpu, tensors[k]), ToDouble(expected[k]), 1e-5,
               c.name + " operand " + std::to_string(k));
  }
}

INSTANTIATE_TEST_SUITE_P(Maps, MapTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<MapCase>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace trident
