// GEMM speed of the CUDA backend at GPT-2 small shapes (8 sequences of 1024 tokens, hidden 768,
// MLP 3072), in fp32 and bf16, reported as the counter "TFLOP/s" (2·M·N·K per product).
//
// The four linear layers of a block, y_NO = x_NI · w_OIᵀ, each with its three products as
// runtime/layers/layer_ops.cc issues them:
//   forward       y_NO  = x_NI · w_OIᵀ     Gemm(false, true),  β 0
//   input grad    dx_NI = dy_NO · w_OI     Gemm(false, false), β 0
//   weight grad   dw_OI += dy_NOᵀ · x_NI   Gemm(true, false),  β 1
// Gemm/<layer>/<product>/<dtype> times one product (kRepeats back to back per timed iteration,
// so the launch and synchronization latency, ~10 µs, does not weigh on a ~15 µs product);
// GptBlockGemmsForwardBackward/<dtype> times all 12 products of one block's forward and
// backward per iteration: the figure to hold against the GPU's dense bf16 peak.
//
// Timing: wall clock between two Synchronize() calls (manual time), after a warm-up call that
// lets cuBLAS pick its kernels. Inputs are uniform in [-1, 1) (zeros would flatter the tensor
// cores' power draw). Without a usable GPU every benchmark reports "no CUDA device: ...".
// Not a ctest; run on a GPU: build/tests/runtime/compute/cuda_benchmark.
//
// Shape legend: N tokens, I input features, O output features.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compute_test_util.h"
#include "core/status.h"
#include "runtime/compute/compute_factory.h"

namespace trident {
namespace {

constexpr int64_t kTokens = 8 * 1024;
constexpr int64_t kHidden = 768;
constexpr int64_t kMlp = 3072;
constexpr int kRepeats = 10;

struct Linear {
  const char* name;
  int64_t in, out;
};

// In forward order.
constexpr Linear kLinears[] = {{"qkv", kHidden, 3 * kHidden},
                               {"proj", kHidden, kHidden},
                               {"fc", kHidden, kMlp},
                               {"fc2", kMlp, kHidden}};

enum class Product { kForward, kInputGrad, kWeightGrad };

const char* ProductName(Product product) {
  switch (product) {
    case Product::kForward:
      return "forward";
    case Product::kInputGrad:
      return "input_grad";
    case Product::kWeightGrad:
      return "weight_grad";
  }
  return "?";
}

// FLOPs of one product of `linear` (each is [N × I]·[I × O] or a transpose of it).
double Flops(const Linear& linear) {
  return 2.0 * static_cast<double>(kTokens * linear.in * linear.out);
}

// The CUDA backend, or null after marking the benchmark skipped.
Compute* CudaOrSkip(benchmark::State& state) {
  if (Cuda().compute == nullptr) {
    state.SkipWithError(("no CUDA device: " + Cuda().error).c_str());
    return nullptr;
  }
  return Cuda().compute.get();
}

// A tensor of `shape` and `type` holding values uniform in [-1, 1): one random block of an odd
// length, uploaded and cast into place over and over.
Tensor RandomTensor(Compute& compute, std::vector<int64_t> shape, ElementType type) {
  constexpr int64_t kBlock = (int64_t{1} << 20) - 3;
  static const std::vector<float>* const values = new std::vector<float>(RandomFloats(kBlock, 1));
  Tensor block = Upload(compute, {kBlock}, *values);
  Tensor t = compute.Allocate(std::move(shape), type);
  for (int64_t offset = 0; offset < t.numel(); offset += kBlock) {
    const int64_t n = std::min(kBlock, t.numel() - offset);
    Tensor dst = t.View(offset, {n});
    compute.Cast(block.View(0, {n}), dst);
  }
  return t;
}

// The operands of one linear layer and its gradients.
struct LinearTensors {
  Tensor x_NI, w_OI, y_NO, dy_NO, dx_NI, dw_OI;
};

LinearTensors MakeLinear(Compute& compute, const Linear& linear, ElementType type) {
  return {RandomTensor(compute, {kTokens, linear.in}, type),
          RandomTensor(compute, {linear.out, linear.in}, type),
          compute.Allocate({kTokens, linear.out}, type),
          RandomTensor(compute, {kTokens, linear.out}, type),
          compute.Allocate({kTokens, linear.in}, type),
          compute.Allocate({linear.out, linear.in}, type)};
}

void RunProduct(Compute& compute, Product product, LinearTensors& t) {
  switch (product) {
    case Product::kForward:
      compute.Gemm(false, true, 1.0f, t.x_NI, t.w_OI, 0.0f, t.y_NO);
      break;
    case Product::kInputGrad:
      compute.Gemm(false, false, 1.0f, t.dy_NO, t.w_OI, 0.0f, t.dx_NI);
      break;
    case Product::kWeightGrad:
      compute.Gemm(true, false, 1.0f, t.dy_NO, t.x_NI, 1.0f, t.dw_OI);
      break;
  }
}

// Runs `work` once to warm up, then times it per iteration between two synchronizations, and
// reports `flops` per iteration as "TFLOP/s".
template <typename Work>
void TimeIterations(benchmark::State& state, Compute& compute, double flops, Work work) {
  work();
  compute.Synchronize();
  for (auto _ : state) {
    compute.Synchronize();
    const auto start = std::chrono::steady_clock::now();
    work();
    compute.Synchronize();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

void GemmProduct(benchmark::State& state, const Linear& linear, Product product, ElementType type) {
  Compute* compute = CudaOrSkip(state);
  if (compute == nullptr) return;
  LinearTensors t = MakeLinear(*compute, linear, type);
  TimeIterations(state, *compute, kRepeats * Flops(linear), [&] {
    for (int r = 0; r < kRepeats; ++r) RunProduct(*compute, product, t);
  });
}

// The 12 products of one block: the forward of each layer in order, then the input and weight
// gradients of each in reverse order.
void GptBlockGemmsForwardBackward(benchmark::State& state, ElementType type) {
  Compute* compute = CudaOrSkip(state);
  if (compute == nullptr) return;
  std::vector<LinearTensors> layers;
  double flops = 0;
  for (const Linear& linear : kLinears) {
    layers.push_back(MakeLinear(*compute, linear, type));
    flops += 3 * Flops(linear);
  }
  state.SetLabel(compute->Describe());
  TimeIterations(state, *compute, flops, [&] {
    for (LinearTensors& t : layers) RunProduct(*compute, Product::kForward, t);
    for (auto t = layers.rbegin(); t != layers.rend(); ++t) {
      RunProduct(*compute, Product::kInputGrad, *t);
      RunProduct(*compute, Product::kWeightGrad, *t);
    }
  });
}

void RegisterBenchmarks() {
  for (ElementType type : {ElementType::kFp32, ElementType::kBf16}) {
    const std::string dtype = ElementTypeName(type);
    for (const Linear& linear : kLinears) {
      for (Product product : {Product::kForward, Product::kInputGrad, Product::kWeightGrad}) {
        const std::string name =
            std::string("Gemm/") + linear.name + "/" + ProductName(product) + "/" + dtype;
        benchmark::RegisterBenchmark(name.c_str(), GemmProduct, linear, product, type)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
    benchmark::RegisterBenchmark(("GptBlockGemmsForwardBackward/" + dtype).c_str(),
                                 GptBlockGemmsForwardBackward, type)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace trident

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  trident::RegisterBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
