#include "models/layer_gemms.h"

#include <gtest/gtest.h>

#include <utility>

#include "tests/models/model_fixtures.h"

namespace trident {
namespace {

double SumFlops(const std::vector<GemmShape>& gemms) {
  double flops = 0;
  for (const GemmShape& g : gemms) flops += g.Flops();
  return flops;
}

// The GEMM list and the FLOP formulas are two descriptions of one forward pass.
TEST(LayerGemms, FlopsAgreeWithTheCostFormulas) {
  for (const ModelSpec& model : {Gpt2SmallSpec(), Llama3Spec8b(), TinyGptSpec()}) {
    for (auto [tp, cp] : {std::pair{1, 1}, {2, 1}, {4, 1}, {1, 4}, {2, 2}}) {
      LayerShape shape{2, 128, tp, DType::kBf16, RecomputeMode::kNone, false, cp};
      for (LayerKind kind : {LayerKind::kGptBlock, LayerKind::kLlamaBlock, LayerKind::kMlpBlock}) {
        bool used = false;
        for (const LayerGroup& g : model.layers) used |= g.kind == kind;
        if (!used || !model.TensorParallelProblem(tp).empty()) continue;
        LayerCost cost = AnalyticLayerCost(model, kind, shape);
        EXPECT_DOUBLE_EQ(SumFlops(LayerForwardGemms(model, kind, shape)), cost.fwd_flops)
            << model.name << " tp " << tp << " cp " << cp;
      }
    }
  }
}

TEST(LayerGemms, GptBlockShapesByHand) {
  // gpt2-small, b 1, s 1024, tp 2: QKV [1024 × 768]·[768 × 1152], proj [1024 × 384]·[384 × 768],
  // FC1 [1024 × 768]·[768 × 1536], FC2 [1024 × 1536]·[1536 × 768], 6 heads of 64.
  LayerShape shape{1, 1024, 2, DType::kFp32, RecomputeMode::kNone};
  std::vector<GemmShape> gemms = LayerForwardGemms(Gpt2SmallSpec(), LayerKind::kGptBlock, shape);
  std::vector<GemmShape> want = {{1024, 1152, 768, 1, false}, {1024, 768, 384, 1, false},
                                 {1024, 1536, 768, 1, false}, {1024, 768, 1536, 1, false},
                                 {1024, 1024, 64, 6, true},   {1024, 64, 1024, 6, true}};
  EXPECT_EQ(gemms, want);
}

TEST(LayerGemms, LmHeadPadsTheVocabularyShard) {
  LayerShape shape{1, 16, 4, DType::kFp32, RecomputeMode::kNone};
  std::vector<GemmShape> gemms = LayerForwardGemms(Gpt2SmallSpec(), LayerKind::kLmHead, shape);
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].n, 12565);  // ceil(50257 / 4)
  EXPECT_TRUE(LayerForwardGemms(Gpt2SmallSpec(), LayerKind::kEmbedding, shape).empty());
}

}  // namespace
}  // namespace trident
