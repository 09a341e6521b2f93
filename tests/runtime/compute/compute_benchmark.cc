// Speed of CpuCompute on one thread at GPT-2 small shapes (hidden 768, 12 heads, sequence
// 1024, micro-batch 1): the GEMMs of a block (QKV, FC1, FC2) reported as FLOP/s (2·M·N·K per
// product), and the memory-bound softmax and LayerNorm reported as bytes/s (each element
// read once and written once: 2 · 4 bytes, plus the saved statistics for LayerNorm).
// CI runs it briefly to prove it works; run build/tests/runtime/compute/compute_benchmark
// for the figures.
//
// Shape legend: M, K, N the GEMM dimensions ([M × K] · [K × N]); A heads; S sequence;
// H hidden.
#include <benchmark/benchmark.h>

#include "compute_test_util.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

// [M × K] · [K × N], args {M, K, N}.
void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  CpuCompute compute;
  Tensor a_MK = Upload(compute, {m, k}, RandomFloats(m * k, 1));
  Tensor b_KN = Upload(compute, {k, n}, RandomFloats(k * n, 2));
  Tensor c_MN = compute.Allocate({m, n});
  for (auto _ : state) {
    compute.Gemm(false, false, 1.0f, a_MK, b_KN, 0.0f, c_MN);
    benchmark::DoNotOptimize(c_MN.raw_data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Gemm)
    ->Args({1024, 768, 2304})  // QKV projection
    ->Args({1024, 768, 3072})  // MLP up (FC1)
    ->Args({1024, 3072, 768})  // MLP down (FC2)
    ->Unit(benchmark::kMillisecond);

// Causal softmax over the attention scores of 12 heads: [12, S, S], arg S.
void BM_CausalSoftmax(benchmark::State& state) {
  const int64_t seq = state.range(0);
  CpuCompute compute;
  Tensor scores_ASS = Upload(compute, {12, seq, seq}, RandomFloats(12 * seq * seq, 3));
  Tensor probs_ASS = compute.Allocate({12, seq, seq});
  for (auto _ : state) {
    compute.Softmax(scores_ASS, SoftmaxMask::Causal(), probs_ASS);
    benchmark::DoNotOptimize(probs_ASS.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * scores_ASS.bytes());
}
BENCHMARK(BM_CausalSoftmax)->Arg(1024)->Unit(benchmark::kMillisecond);

// LayerNorm forward of [S, H] activations, H = 768, arg S.
void BM_LayerNorm(benchmark::State& state) {
  const int64_t seq = state.range(0), hidden = 768;
  CpuCompute compute;
  Tensor x_SH = Upload(compute, {seq, hidden}, RandomFloats(seq * hidden, 4));
  Tensor gamma_H = Upload(compute, {hidden}, RandomFloats(hidden, 5));
  Tensor beta_H = Upload(compute, {hidden}, RandomFloats(hidden, 6));
  Tensor y_SH = compute.Allocate({seq, hidden});
  Tensor mean_S = compute.Allocate({seq}), rstd_S = compute.Allocate({seq});
  for (auto _ : state) {
    compute.LayerNorm(x_SH, gamma_H, beta_H, 1e-5f, y_SH, mean_S, rstd_S);
    benchmark::DoNotOptimize(y_SH.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * (x_SH.bytes() + y_SH.bytes() + 2 * mean_S.bytes()));
}
BENCHMARK(BM_LayerNorm)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace trident

BENCHMARK_MAIN();
