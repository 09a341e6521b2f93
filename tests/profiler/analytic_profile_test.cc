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
      for (int tp : {1, 2, 4}) EXPECT_NE(profile->Find(layer, mb, tp, false, 1), nullptr);
      EXPECT_EQ(profile->Find(layer, mb, 8, false, 1), nullptr);
    }
  }
}

// A big, well-shaped GPT-3 block is compute-bound: it runs close to (never above) the GEMM
// efficiency, and its backward costs about twice its forward.
TEST(AnalyticProfile, LargeBlocksRunNearTheGemmEfficiency) {
  ModelSpec model = LoadPreset("gpt3-175b");
  ClusterSpec cluster = LoadCluster("dgx-a100-80gb");
  AnalyticProfileOptions options{{1}, {8}, 2048, DType::kBf16, {1}};
  StatusOr<Profile> profile = AnalyticProfile(model, cluster, options);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const ProfileEntry* block = profile->Find(1, 1, 8, false, 1);
  ASSERT_NE(block, nullptr);
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kGptBlock,
                                     {1, 2048, 8, DType::kBf16, RecomputeMode::kNone});
  double achieved = cost.fwd_flops / (block->fwd_ms * 1e-3) / 312e12;
  EXPECT_GT(achieved, 0.5);
  EXPECT_LT(achieved, cluster.device.efficiency.GemmFraction(1e6));
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
  StatusOr<Profile> thin = AnalyticProfile(model, cluster, {{1}, {1}, 4, DType::kBf16, {}});
  StatusOr<Profile> full = AnalyticProfile(model, cluster, {{1}, {1}, 128, DType::kBf16, {}});
  ASSERT_TRUE(thin.ok() && full.ok());
  double thin_ms = thin->Find(1, 1, 1, false, 1)->fwd_ms;
  double full_ms = full->Find(1, 1, 1, false, 1)->fwd_ms;
  EXPECT_GT(thin_ms, 0.5 * full_ms);  // 32x fewer tokens, not 32x less time
}

TEST(AnalyticProfile, MemoryFollowsTheMixedPrecisionRule) {
  ModelSpec model = LoadPreset("gpt2-small");
  StatusOr<Profile> profile =
      AnalyticProfile(model, LoadCluster("dgx-a100-80gb"), {{1}, {1}, 1024, DType::kBf16, {}});
  ASSERT_TRUE(profile.ok());
  const ProfileEntry* block = profile->Find(1, 1, 1, false, 1);
  EXPECT_EQ(block->param_bytes, 7087872 * 2);
  EXPECT_EQ(block->grad_bytes, 7087872 * 4);
  EXPECT_EQ(block->optimizer_bytes, 7087872 * 12);
}

TEST(AnalyticProfile, DefaultContextDegreesLeaveEachRankAThousandTokens) {
  EXPECT_EQ(DefaultContextDegrees(8192), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(DefaultContextDegrees(131072), (std::vector<int>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(DefaultContextDegrees(2048), (std::vector<int>{1, 2}));
  EXPECT_EQ(DefaultContextDegrees(1000), (std::vector<int>{1}));
}

// The cp all-gathers and reduce-scatter as rings in the pass that issues them: inside a node
// (NVLink) while tp·cp fits in one, on the inter-node link beyond. Llama 3 8B block, bf16,
// seq 8192, tp 4: K and V of the whole sequence, 2 · 2 bytes · 8192 · 256 = 8 MiB per call.
TEST(AnalyticProfile, ContextParallelRingsRunOnTheLinkTheGroupSpans) {
  ModelSpec model = LoadPreset("llama3-8b");
  ClusterSpec cluster = LoadCluster("dgx-h100");
  AnalyticProfileOptions options{{1}, {4}, 8192, DType::kBf16, {1, 2, 4}};
  StatusOr<Profile> profile = AnalyticProfile(model, cluster, options);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const ProfileEntry* whole = profile->Find(1, 1, 4, false, 1);
  const ProfileEntry* inside = profile->Find(1, 1, 4, false, 2);  // tp·cp 8: one node
  const ProfileEntry* across = profile->Find(1, 1, 4, false, 4);  // tp·cp 16: two nodes
  ASSERT_TRUE(whole && inside && across);
  EXPECT_EQ(inside->stashed_none_bytes * 2, whole->stashed_none_bytes);
  EXPECT_EQ(inside->param_bytes, whole->param_bytes);
  const double k = 2.0 * 8192 * 256;  // K (or V) of the whole sequence, bf16, tp 4
  auto ring_ms = [k](int c, const LinkSpec& link) {
    return 2 * ((c - 1.0) / c * k / (link.bw_gb_per_s * link.efficiency * 1e6) +
                (link.collective_latency_us + (c - 1) * link.latency_us) * 1e-3);
  };
  // Forward: two gathers (k, v); the full recompute's forward reuses the input gradient's.
  EXPECT_NEAR(inside->fwd_ms - inside->recompute_full_ms, ring_ms(2, cluster.intra_node), 1e-9);
  EXPECT_NEAR(across->fwd_ms - across->recompute_full_ms, ring_ms(4, cluster.inter_node), 1e-9);
  EXPECT_DOUBLE_EQ(whole->fwd_ms, whole->recompute_full_ms);
  // The entries are written and read back with their cp.
  StatusOr<Profile> again = ParseProfile(ProfileToYaml(*profile), "profile.yaml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again->Find(1, 1, 4, false, 4), *across);
}

// Flash attention at 8K tokens: no s×s softmax traffic and half the products under the causal
// mask make the forward and backward faster, and selective recompute costs nothing; the
// linear layers' weight gradient is the same.
TEST(AnalyticProfile, FlashAttentionSkipsTheScores) {
  ModelSpec flash = LoadPreset("llama3-8b");
  ASSERT_EQ(flash.attention, AttentionKind::kFlash);
  ModelSpec unfused = flash;
  unfused.attention = AttentionKind::kUnfused;
  ClusterSpec cluster = LoadCluster("dgx-h100");
  AnalyticProfileOptions options{{1}, {8}, 8192, DType::kBf16, {1}};
  StatusOr<Profile> fast = AnalyticProfile(flash, cluster, options);
  StatusOr<Profile> slow = AnalyticProfile(unfused, cluster, options);
  ASSERT_TRUE(fast.ok() && slow.ok());
  const ProfileEntry* f = fast->Find(1, 1, 8, false, 1);
  const ProfileEntry* u = slow->Find(1, 1, 8, false, 1);
  ASSERT_TRUE(f && u);
  EXPECT_LT(f->fwd_ms, 0.8 * u->fwd_ms);
  EXPECT_LT(f->bwd_input_ms, 0.8 * u->bwd_input_ms);
  EXPECT_DOUBLE_EQ(f->bwd_weight_ms, u->bwd_weight_ms);
  EXPECT_EQ(f->recompute_selective_ms, 0);
  EXPECT_GT(u->recompute_selective_ms, 0);
  EXPECT_EQ(f->stashed_selective_bytes, f->stashed_none_bytes);
  EXPECT_LT(f->stashed_none_bytes, u->stashed_none_bytes / 2);
}

// Each memory-bound kernel pays the launch cost beside its traffic (MemoryBoundKernels in
// analytic_profile.cc). gpt2-small's final LayerNorm, tp 1, seq 1024, bf16, on the A100
// (2,039 GB/s · 0.88): one kernel forward, two backward (input and weight gradients), no GEMM
// and no collective, so forward = 2 · stash / bw + 4 µs and backward = 4 · stash / bw + 8 µs.
TEST(AnalyticProfile, MemoryBoundKernelsPayTheLaunchCost) {
  ModelSpec model = LoadPreset("gpt2-small");
  StatusOr<Profile> profile =
      AnalyticProfile(model, LoadCluster("dgx-a100-80gb"), {{1}, {1}, 1024, DType::kBf16, {1}});
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const int final_norm = model.NumLayers() - 2;
  ASSERT_EQ(profile->layers[2].kind, LayerKind::kFinalNorm);
  const ProfileEntry* norm = profile->Find(final_norm, 1, 1, false, 1);
  ASSERT_NE(norm, nullptr);
  const double bytes_per_ms = 2039 * 0.88 * 1e6;
  const double stash = static_cast<double>(norm->stashed_none_bytes);
  EXPECT_GT(stash, 0);
  EXPECT_NEAR(norm->fwd_ms, 2 * stash / bytes_per_ms + 0.004, 1e-12);
  EXPECT_NEAR(norm->bwd_input_ms, 4 * stash / bytes_per_ms + 0.008, 1e-12);
  EXPECT_EQ(norm->bwd_weight_ms, 0);
}

TEST(AnalyticProfile, ErrorsNameTheFix) {
  ModelSpec model = LoadPreset("gpt2-small");
  ClusterSpec cpu = LoadCluster("local-cpu");
  StatusOr<Profile> no_bf16 = AnalyticProfile(model, cpu, {{1}, {1}, 64, DType::kBf16, {}});
  ASSERT_FALSE(no_bf16.ok());
  EXPECT_THAT(no_bf16.status().message(), ::testing::HasSubstr("no peak_tflops for bf16"));
  StatusOr<Profile> bad_tp = AnalyticProfile(model, cpu, {{1}, {5}, 64, DType::kFp32, {}});
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_THAT(bad_tp.status().message(), ::testing::HasSubstr("tp 5 does not divide 12 heads"));
  StatusOr<Profile> bad_cp = AnalyticProfile(model, cpu, {{1}, {1}, 64, DType::kFp32, {64}});
  ASSERT_FALSE(bad_cp.ok());
  EXPECT_THAT(bad_cp.status().message(), ::testing::HasSubstr("2·cp must divide the sequence 64"));
}

}  // namespace
}  // namespace trident
