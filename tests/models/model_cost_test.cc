// Whole-model costs: published parameter counts and the published GPT FLOPs formula.
#include "models/model_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "tests/models/model_fixtures.h"

namespace trident {
namespace {

LayerShape Bf16Shape(int64_t micro_batch, int64_t seq_len, int tp = 1,
                     RecomputeMode recompute = RecomputeMode::kNone) {
  return LayerShape{.micro_batch = micro_batch,
                    .seq_len = seq_len,
                    .tp = tp,
                    .dtype = DType::kBf16,
                    .recompute = recompute};
}

// A GPT of made-up sizes whose vocabulary divides evenly: V 51200, h 1024, a 16, f 4h, L 24.
ModelSpec MadeUpGpt() {
  ModelSpec model = Gpt2SmallSpec();
  model.name = "made-up-gpt";
  model.vocab_size = 51200;
  model.max_seq_len = 2048;
  model.hidden = 1024;
  model.heads = 16;
  model.kv_heads = 16;
  model.ffn_hidden = 4096;
  model.layers[1].repeat = 24;
  return model;
}

double RelativeError(double actual, double expected) {
  return std::abs(actual - expected) / std::abs(expected);
}

// gpt2-small: embedding 50,257·768 + 1,024·768 = 39,383,808; 12 blocks of 7,087,872 =
// 85,054,464; final LayerNorm 1,536; tied head 0 -> 124,439,808.
TEST(ModelCostTest, Gpt2SmallParameters) {
  ModelSpec model = Gpt2SmallSpec();
  ASSERT_TRUE(model.Validate().ok());
  ModelCost cost = AnalyticModelCost(model, Bf16Shape(1, 1024));
  ASSERT_EQ(cost.layers.size(), 15u);
  EXPECT_EQ(cost.layers.front().total_params, 39383808);
  EXPECT_EQ(cost.layers.back().total_params, 0);  // tied: the embedding owns the matrix
  EXPECT_EQ(cost.total.total_params, 124439808);
  EXPECT_EQ(cost.total.params, 124439808);
  EXPECT_EQ(cost.total.param_bytes, 2 * 124439808);
}

// llama3-8b: embedding and head 128,256·4096 = 525,336,576 each; 32 blocks of 218,112,000 =
// 6,979,584,000; final RMSNorm 4,096 -> 8,030,261,248.
// Per rank at t 8: 2 · 16,032·4096 + 32 · 27,271,168 + 4,096 = 1,004,015,616.
TEST(ModelCostTest, Llama3Parameters) {
  ModelSpec model = Llama3Spec8b();
  ASSERT_TRUE(model.Validate().ok());
  EXPECT_EQ(AnalyticModelCost(model, Bf16Shape(1, 8192)).total.total_params, 8030261248);
  ModelCost tp8 = AnalyticModelCost(model, Bf16Shape(1, 8192, 8));
  EXPECT_EQ(tp8.total.total_params, 8030261248);
  EXPECT_EQ(tp8.total.params, 1004015616);
}

// Narayanan et al. (2021): one training step of a GPT costs
// 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)) = 72BsLh² + 12Bs²Lh + 6BshV FLOPs.
// Made-up GPT, B 4, s 2048: every term is an integer below 2^53, so the sum is exact.
TEST(ModelCostTest, GptFlopsMatchThePublishedFormula) {
  const double batch = 4, s = 2048, layers = 24, h = 1024, v = 51200;
  ModelCost cost = AnalyticModelCost(MadeUpGpt(), Bf16Shape(4, 2048));
  double expected =
      72 * batch * s * layers * h * h + 12 * batch * s * s * layers * h + 6 * batch * s * h * v;
  EXPECT_EQ(cost.total.TotalFlops(), expected);
  double factored = 72 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h));
  EXPECT_LT(RelativeError(cost.total.TotalFlops(), factored), 1e-12);
}

// Full recompute reruns every block's forward (not the head's):
// 96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h)) = 96BsLh² + 16Bs²Lh + 6BshV.
// Selective reruns the attention core only: 72BsLh² + 16Bs²Lh + 6BshV.
TEST(ModelCostTest, GptFlopsWithRecompute) {
  const double batch = 4, s = 2048, layers = 24, h = 1024, v = 51200;
  ModelCost full = AnalyticModelCost(MadeUpGpt(), Bf16Shape(4, 2048, 1, RecomputeMode::kFull));
  double factored = 96 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h));
  EXPECT_LT(RelativeError(full.total.TotalFlops(), factored), 1e-12);
  EXPECT_EQ(full.total.TotalFlops(), 96 * batch * s * layers * h * h +
                                         16 * batch * s * s * layers * h + 6 * batch * s * h * v);
  ModelCost selective =
      AnalyticModelCost(MadeUpGpt(), Bf16Shape(4, 2048, 1, RecomputeMode::kSelective));
  EXPECT_EQ(
      selective.total.TotalFlops(),
      72 * batch * s * layers * h * h + 16 * batch * s * s * layers * h + 6 * batch * s * h * v);
}

// gpt2-small's odd vocabulary (50,257): the formula still holds, to rounding.
TEST(ModelCostTest, Gpt2SmallFlopsMatchThePublishedFormula) {
  const double batch = 8, s = 1024, layers = 12, h = 768, v = 50257;
  ModelCost cost = AnalyticModelCost(Gpt2SmallSpec(), Bf16Shape(8, 1024));
  double factored = 72 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h));
  EXPECT_LT(RelativeError(cost.total.TotalFlops(), factored), 1e-12);
}

// Each rank of a tp group does 1/t of the model's FLOPs, even with a vocabulary t does not
// divide (FLOPs use V/t; only memory is padded).
TEST(ModelCostTest, TensorParallelSplitsFlopsEvenly) {
  for (int tp : {2, 4}) {
    ModelCost whole = AnalyticModelCost(Gpt2SmallSpec(), Bf16Shape(2, 512));
    ModelCost rank = AnalyticModelCost(Gpt2SmallSpec(), Bf16Shape(2, 512, tp));
    EXPECT_LT(RelativeError(rank.total.TotalFlops() * tp, whole.total.TotalFlops()), 1e-12);
  }
}

// Per micro-batch at t 2, a GPT with L blocks issues 1 (embedding) + 2L + 3 (head
// cross-entropy statistics) forward all-reduces and 2L + 1 (head input gradient) backward.
TEST(ModelCostTest, TensorParallelAllReduceCounts) {
  ModelCost cost = AnalyticModelCost(Gpt2SmallSpec(), Bf16Shape(1, 1024, 2));
  EXPECT_EQ(cost.total.tp_fwd.all_reduce.count, 1 + 2 * 12 + 3);
  EXPECT_EQ(cost.total.tp_bwd.all_reduce.count, 2 * 12 + 1);
  ModelCost single = AnalyticModelCost(Gpt2SmallSpec(), Bf16Shape(1, 1024, 1));
  EXPECT_EQ(single.total.tp_fwd, GroupTraffic{});
  EXPECT_EQ(single.total.tp_bwd, GroupTraffic{});
}

TEST(ModelCostTest, TotalIsTheSumOfLayers) {
  ModelSpec model = TinyLlamaSpec();
  LayerShape shape = Bf16Shape(2, 4, 1, RecomputeMode::kSelective);
  ModelCost cost = AnalyticModelCost(model, shape);
  ASSERT_EQ(static_cast<int>(cost.layers.size()), model.NumLayers());
  LayerCost sum;
  for (int i = 0; i < model.NumLayers(); ++i) {
    EXPECT_EQ(cost.layers[i], AnalyticLayerCost(model, model.LayerAt(i), shape)) << i;
    sum = AddLayerCosts(sum, cost.layers[i]);
  }
  EXPECT_EQ(cost.total, sum);
  // Embedding 80, 2 blocks of 592, final RMSNorm 8, head 80.
  EXPECT_EQ(cost.total.total_params, 80 + 2 * 592 + 8 + 80);
  EXPECT_EQ(cost.total.stashed_bytes, 32 + 2 * 1664 + 128 + (128 + 2 * 8 * 10));
}

}  // namespace
}  // namespace trident
