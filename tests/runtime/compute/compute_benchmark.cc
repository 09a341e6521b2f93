// Speed of CpuCompute on one thread at GPT-2 small shapes (hidden 768, 12 heads, sequence
// 1024, micro-batch 1): the GEMMs of a block (QKV, FC1, FC2) reported as FLOP/s (2·M·N·K per
// product), and the memory-bound softmax and LayerNorm reported as bytes/s (each element
// read once and written once: 2 · 4 bytes, plus the saved statistics for LayerNorm), and the
// elementwise maps (GELU and its gradient on the MLP's activations, the residual Add, an AdamW
// step) as bytes/s of the operands read and written.
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

// GELU of the MLP's activations [S, 4H], H = 768, arg S; read x, write y.
void BM_Gelu(benchmark::State& state) {
  const int64_t n = state.range(0) * 3072;
  CpuCompute compute;
  Tensor x = Upload(compute, {n}, RandomFloats(n, 7));
  Tensor y = compute.Allocate({n});
  for (auto _ : state) {
    compute.Activation(ActivationKind::kGelu, x, y);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * x.bytes());
}
BENCHMARK(BM_Gelu)->Arg(1024)->Unit(benchmark::kMicrosecond);

// GELU's input gradient on [S, 4H]: read x and dy, write dx.
void BM_GeluBackward(benchmark::State& state) {
  const int64_t n = state.range(0) * 3072;
  CpuCompute compute;
  Tensor x = Upload(compute, {n}, RandomFloats(n, 8));
  Tensor dy = Upload(compute, {n}, RandomFloats(n, 9));
  Tensor dx = compute.Allocate({n});
  for (auto _ : state) {
    compute.ActivationBackward(ActivationKind::kGelu, x, dy, dx);
    benchmark::DoNotOptimize(dx.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 3 * x.bytes());
}
BENCHMARK(BM_GeluBackward)->Arg(1024)->Unit(benchmark::kMicrosecond);

// The residual Add on [S, H]: read a and b, write out.
void BM_Add(benchmark::State& state) {
  const int64_t n = state.range(0) * 768;
  CpuCompute compute;
  Tensor a = Upload(compute, {n}, RandomFloats(n, 10));
  Tensor b = Upload(compute, {n}, RandomFloats(n, 11));
  Tensor out = compute.Allocate({n});
  for (auto _ : state) {
    compute.Add(a, b, out);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 3 * a.bytes());
}
BENCHMARK(BM_Add)->Arg(1024)->Unit(benchmark::kMicrosecond);

// One AdamW step over arg parameters (one GPT-2 small block holds 7,087,872): read grad,
// param, m and v, write param, m and v.
void BM_AdamW(benchmark::State& state) {
  const int64_t n = state.range(0);
  CpuCompute compute;
  Tensor grad = Upload(compute, {n}, RandomFloats(n, 12));
  Tensor param = Upload(compute, {n}, RandomFloats(n, 13));
  Tensor m = compute.Allocate({n}), v = compute.Allocate({n});
  int64_t step = 0;
  for (auto _ : state) {
    compute.AdamW(AdamWConfig{.weight_decay = 0.01f}, ++step, grad, param, m, v);
    benchmark::DoNotOptimize(param.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 7 * param.bytes());
}
BENCHMARK(BM_AdamW)->Arg(7087872)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trident

BENCHMARK_MAIN();
