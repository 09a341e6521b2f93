// Speed of one GPT block on CpuCompute, one thread, at GPT-2 small shapes (hidden 768, 12 heads,
// ffn 3072, micro-batch 1, fp32), next to a plain GEMM of the same backend:
//   BM_Gemm/S      [S × 768] · [768 × 3072] (FC1 of the block), 2·S·768·3072 FLOPs per product;
//   BM_GptBlock/S  Forward + BackwardInput + BackwardWeight of one micro-batch [1, S, 768],
//                  FLOPs from models/ AnalyticLayerCost (fwd + bwd_input + bwd_weight).
// Both report "flops" as a rate (FLOP/s). The block's rate over the GEMM's at S = 1024 is the
// figure quoted: how close a whole block comes to the backend's GEMM speed. CI runs S = 128
// briefly to prove it works; run build/tests/runtime/layers/layers_benchmark for the figures.
//
// Shape legend as in runtime/layers/layer.h; S the sequence length (the benchmark argument).
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "models/layer_cost.h"
#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

constexpr int64_t kHidden = 768, kFfn = 3072;

// GPT-2 small (one block is all that is built), with max_seq_len `seq`.
ModelSpec Gpt2Small(int64_t seq) {
  ModelSpec m = SmallGpt();
  m.name = "gpt2-small";
  m.vocab_size = 50257;
  m.max_seq_len = seq;
  m.hidden = kHidden;
  m.heads = 12;
  m.kv_heads = 12;
  m.ffn_hidden = kFfn;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, 12},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

// [S × 768] · [768 × 3072], arg S.
void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = kHidden, n = kFfn;
  CpuCompute compute;  // one thread
  Tensor a_MK = FromHost(compute, {m, k}, RandomValues(m * k, 1.0f, 1));
  Tensor b_KN = FromHost(compute, {k, n}, RandomValues(k * n, 1.0f, 2));
  Tensor c_MN = compute.Allocate({m, n});
  for (auto _ : state) {
    compute.Gemm(false, false, 1.0f, a_MK, b_KN, 0.0f, c_MN);
    benchmark::DoNotOptimize(c_MN.raw_data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Gemm)->Arg(1024)->Arg(128)->Unit(benchmark::kMillisecond);

// One GPT block, forward + input gradient + weight gradient of micro-batch [1, S, 768], arg S.
void BM_GptBlock(benchmark::State& state) {
  const int64_t seq = state.range(0);
  const ModelSpec model = Gpt2Small(seq);
  CpuCompute compute;  // one thread
  LayerContext context{&compute, nullptr, 0, 1, 42, 1, RecomputeMode::kNone};
  std::unique_ptr<Layer> block = MakeLayer(model, LayerKind::kGptBlock, context);
  const std::vector<int64_t> shape = {1, seq, kHidden};
  Tensor x_BSH = FromHost(compute, shape, RandomValues(seq * kHidden, 1.0f, 3));
  Tensor dy_BSH = FromHost(compute, shape, RandomValues(seq * kHidden, 1.0f, 4));
  for (auto _ : state) {
    Tensor y_BSH = block->Forward(0, x_BSH.View(0, shape));
    Tensor dx_BSH = block->BackwardInput(0, dy_BSH.View(0, shape));
    block->BackwardWeight(0);  // weight gradients accumulate: harmless here
    benchmark::DoNotOptimize(y_BSH.raw_data());
    benchmark::DoNotOptimize(dx_BSH.raw_data());
  }
  LayerShape layer_shape;
  layer_shape.micro_batch = 1;
  layer_shape.seq_len = seq;
  const LayerCost cost = AnalyticLayerCost(model, LayerKind::kGptBlock, layer_shape);
  state.counters["flops"] =
      benchmark::Counter(cost.fwd_flops + cost.bwd_input_flops + cost.bwd_weight_flops,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GptBlock)->Arg(1024)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trident

BENCHMARK_MAIN();
