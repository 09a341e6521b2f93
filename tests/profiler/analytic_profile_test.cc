#include "profiler/analytic_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "models/layer_cost.h"

namespace trident {
namespace {

ModelSpec LoadPreset(const std::string& name) {
  StatusOr<ModelSpec> model = LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/" + name + ".yaml");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return *model;
}

ClusterSpec LoadCluster(const std::string& name) {
  StatusOr<ClusterSpec> cluster =
      LoadClusterSpec(TRIDENT_SOURCE_DIR "/configs/clusters/" + name + ".yaml");
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return *cluster;
}

TEST(AnalyticProfile, CoversEveryLayerAndValidates) {
  ModelSpec model = LoadPreset("gpt2-small");
  AnalyticProfileOptions options;
  options.seq_len = 1024;
  StatusOr<Profile> profile = AnalyticProfile(model, LoadCluster("dgx-a100-80gb"), options);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_TRUE(profile->Validate().ok()) << profile->Validate().ToString();
  EXPECT_EQ(profile->method.source, ProfileSource::kAnalytic);
  // gpt2-small's 12 heads admit tp 1, 2 and 4 of the 8 devices per node.
  for (int layer = 0; layer < model.NumLayers(); ++layer) {
    for (int mb : {1, 2, 4, 8}) {
      for (int tp : {1, 2, 4}) EXPECT_NE(profile->Find(layer, mb, tp, false), nullptr);
      EXPECT_EQ(profile->Find(layer, mb, 8, false), nullptr);
    }
  }
}

// A big, well-shaped GPT-3 block is compute-bound: it runs close to (never above) the GEMM
// efficiency, and its backward costs about twice its forward.
TEST(AnalyticProfile, LargeBlocksRunNearTheGemmEfficiency) {
  ModelSpec model = LoadPreset("gpt3-175b");
  AnalyticProfileOptions options{{1}, {8}, 2048, DType::kBf16};
  StatusOr<Profile> profile = AnalyticProfile(model, LoadCluster("dgx-a100-80gb"), options);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const ProfileEntry* block = profile->Find(1, 1, 8, false);
  ASSERT_NE(block, nullptr);
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kGptBlock,
                                     {1, 2048, 8, DType::kBf16, RecomputeMode::kNone});
  double achieved = cost.fwd_flops / (block->fwd_ms * 1e-3) / 312e12;
  EXPECT_GT(achieved, 0.5);
  EXPECT_LT(achieved, kGemmEfficiency);
  double backward = block->bwd_input_ms + block->bwd_weight_ms;
  EXPECT_NEAR(backward / block->fwd_ms, 2.0, 0.3);
  EXPECT_DOUBLE_EQ(block->recompute_full_ms, block->fwd_ms);
  EXPECT_LT(block->recompute_selective_ms, 0.2 * block->fwd_ms);
  EXPECT_LT(block->stashed_selective_bytes, block->stashed_none_bytes);
}

// Thin GEMMs waste most of a tensor-core tile: a 4-token micro-batch costs nearly what a
// 128-token one does.
TEST(AnalyticProfile, ThinShapesRunFarBelowPeak) {
  ModelSpec model = LoadPreset("gpt2-small");
  ClusterSpec cluster = LoadCluster("dgx-a100-80gb");
  StatusOr<Profile> thin = AnalyticProfile(model, cluster, {{1}, {1}, 4, DType::kBf16});
  StatusOr<Profile> full = AnalyticProfile(model, cluster, {{1}, {1}, 128, DType::kBf16});
  ASSERT_TRUE(thin.ok() && full.ok());
  double thin_ms = thin->Find(1, 1, 1, false)->fwd_ms;
  double full_ms = full->Find(1, 1, 1, false)->fwd_ms;
  EXPECT_GT(thin_ms, 0.5 * full_ms);  // 32x fewer tokens, not 32x less time
}

TEST(AnalyticProfile, MemoryFollowsTheMixedPrecisionRule) {
  ModelSpec model = LoadPreset("gpt2-small");
  StatusOr<Profile> profile =
      AnalyticProfile(model, LoadCluster("dgx-a100-80gb"), {{1}, {1}, 1024, DType::kBf16});
  ASSERT_TRUE(profile.ok());
  const ProfileEntry* block = profile->Find(1, 1, 1, false);
  EXPECT_EQ(block->param_bytes, 7087872 * 2);
  EXPECT_EQ(block->grad_bytes, 7087872 * 4);
  EXPECT_EQ(block->optimizer_bytes, 7087872 * 12);
}

TEST(AnalyticProfile, ErrorsNameTheFix) {
  ModelSpec model = LoadPreset("gpt2-small");
  ClusterSpec cpu = LoadCluster("local-cpu");
  StatusOr<Profile> no_bf16 = AnalyticProfile(model, cpu, {{1}, {1}, 64, DType::kBf16});
  ASSERT_FALSE(no_bf16.ok());
  EXPECT_THAT(no_bf16.status().message(), ::testing::HasSubstr("no peak_tflops for bf16"));
  StatusOr<Profile> bad_tp = AnalyticProfile(model, cpu, {{1}, {5}, 64, DType::kFp32});
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_THAT(bad_tp.status().message(), ::testing::HasSubstr("tp 5 does not divide 12 heads"));
}

}  // namespace
}  // namespace trident
