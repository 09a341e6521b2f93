// Alpha-beta communication costs with ring factors at the cluster level a group spans, and
// measured figures overriding them.
#include "planner/cost_model.h"

#include <gtest/gtest.h>

namespace trident {
namespace {

ClusterSpec Cluster() {
  ClusterSpec c;
  c.name = "test";
  c.nodes = 4;
  c.devices_per_node = 8;
  c.device = {"gpu", DeviceKind::kGpu, 80, {{DType::kBf16, 312}}, 2000, {}, {}};
  c.intra_node = {300, 3, 1};  // GB/s, µs, efficiency
  c.inter_node = {25, 5, 1};
  return c;
}

Profile OneLayer() {
  Profile p;
  p.model = "m";
  p.num_layers = 1;
  p.seq_len = 8;
  p.layers = {{0, 1, LayerKind::kMlpBlock, {ProfileEntry{1, 1}, ProfileEntry{2, 1}}}};
  return p;
}

TEST(CostModel, RingFormulasWithTheHeaderExample) {
  ClusterSpec cluster = Cluster();
  Profile profile = OneLayer();
  ProfileCostModel costs(profile, cluster);
  // All-reduce of 1 GB over 8 ranks at 25 GB/s, α 5 µs: 14·5 µs + 1.75·40 ms = 70.07 ms.
  EXPECT_NEAR(costs.CollectiveMs(Collective::kAllReduce, 1e9, 8, LinkClass::kInterNode), 70.07,
              1e-9);
  // All-gather: 7·5 µs + 0.875·40 ms = 35.035 ms. P2p: 5 µs + 40 ms.
  EXPECT_NEAR(costs.CollectiveMs(Collective::kAllGather, 1e9, 8, LinkClass::kInterNode), 35.035,
              1e-9);
  EXPECT_NEAR(costs.CollectiveMs(Collective::kP2p, 1e9, 2, LinkClass::kInterNode), 40.005, 1e-9);
  // Intra-node: 2·(2−1)/2 · 3e8 B / 300 GB/s + 2·3 µs = 1.006 ms.
  EXPECT_NEAR(costs.CollectiveMs(Collective::kAllReduce, 3e8, 2, LinkClass::kIntraNode), 1.006,
              1e-9);
  EXPECT_EQ(costs.CollectiveMs(Collective::kAllReduce, 1e9, 1, LinkClass::kInterNode), 0);
}

TEST(CostModel, MeasuredFiguresOverrideTheSpecification) {
  ClusterSpec cluster = Cluster();
  cluster.measured = {{Collective::kAllReduce, LinkClass::kInterNode, 4, 20, 10}};
  Profile profile = OneLayer();
  ProfileCostModel costs(profile, cluster);
  // 20 µs + 1e9 B / 10 GB/s = 100.02 ms, for exactly this collective, link and group size.
  EXPECT_NEAR(costs.CollectiveMs(Collective::kAllReduce, 1e9, 4, LinkClass::kInterNode), 100.02,
              1e-9);
  EXPECT_NEAR(costs.CollectiveMs(Collective::kAllReduce, 1e9, 8, LinkClass::kInterNode), 70.07,
              1e-9);
}

// 8 nodes of 4 devices in pods of 2 nodes (4 pods): ranks 0-7 share a pod, 0-15 span two.
ClusterSpec Pods() {
  ClusterSpec c = Cluster();
  c.nodes = 8;
  c.devices_per_node = 4;
  c.inter_node = {50, 5};
  c.levels = {{"pod", 2, {12.5, 10}}};
  return c;
}

TEST(CostModel, AGroupIsCostedAtTheLevelItSpans) {
  ClusterSpec cluster = Pods();
  ASSERT_TRUE(cluster.Validate().ok()) << cluster.Validate().ToString();
  Profile profile = OneLayer();
  ProfileCostModel costs(profile, cluster);
  auto all_reduce_ms = [&costs](int first_rank, int last_rank) {
    return costs.CollectiveMsAtLevel(Collective::kAllReduce, 1e9, last_rank - first_rank + 1,
                                     costs.LevelSpanning(first_rank, last_rank));
  };
  // Ranks 0-3, one node: 6·3 µs + 1.5 · 1e9 B / 300 GB/s = 0.018 + 5 = 5.018 ms.
  EXPECT_EQ(costs.LevelSpanning(0, 3), 0);
  EXPECT_NEAR(all_reduce_ms(0, 3), 5.018, 1e-9);
  // Ranks 0-7, one pod, inter_node: 14·5 µs + 1.75 · 20 ms = 35.07 ms.
  EXPECT_EQ(costs.LevelSpanning(0, 7), 1);
  EXPECT_NEAR(all_reduce_ms(0, 7), 35.07, 1e-9);
  // Ranks 0-15, two pods, the pod link: 30·10 µs + 1.875 · 80 ms = 150.3 ms.
  EXPECT_EQ(costs.LevelSpanning(0, 15), 2);
  EXPECT_NEAR(all_reduce_ms(0, 15), 150.3, 1e-9);
  // P2p between neighbouring pods: 10 µs + 80 ms.
  EXPECT_EQ(costs.LevelSpanning(7, 8), 2);
  EXPECT_NEAR(costs.CollectiveMsAtLevel(Collective::kP2p, 1e9, 2, 2), 80.01, 1e-9);
}

TEST(CostModel, APlainClusterCostsAsItsTwoLinkClasses) {
  ClusterSpec cluster = Cluster();  // 4 nodes of 8
  Profile profile = OneLayer();
  ProfileCostModel costs(profile, cluster);
  EXPECT_EQ(costs.LevelSpanning(0, 7), 0);
  EXPECT_EQ(costs.LevelSpanning(7, 8), 1);
  EXPECT_EQ(costs.LevelSpanning(0, 31), 1);
  for (Collective c : {Collective::kP2p, Collective::kAllReduce, Collective::kAllGather,
                       Collective::kReduceScatter}) {
    EXPECT_EQ(costs.CollectiveMsAtLevel(c, 1e9, 8, 0),
              costs.CollectiveMs(c, 1e9, 8, LinkClass::kIntraNode));
    EXPECT_EQ(costs.CollectiveMsAtLevel(c, 1e9, 8, 1),
              costs.CollectiveMs(c, 1e9, 8, LinkClass::kInterNode));
  }
  // The header's example: 70.07 ms at level 1, the outermost.
  EXPECT_NEAR(costs.CollectiveMsAtLevel(Collective::kAllReduce, 1e9, 8, costs.LevelSpanning(0, 31)),
              70.07, 1e-9);
}

TEST(CostModel, MeasuredFiguresApplyToLevelsZeroAndOneOnly) {
  ClusterSpec cluster = Pods();
  cluster.measured = {{Collective::kAllReduce, LinkClass::kInterNode, 2, 20, 10},
                      {Collective::kAllReduce, LinkClass::kIntraNode, 2, 1, 100}};
  ASSERT_TRUE(cluster.Validate().ok()) << cluster.Validate().ToString();
  Profile profile = OneLayer();
  ProfileCostModel costs(profile, cluster);
  // 20 µs + 1e9 B / 10 GB/s = 100.02 ms; 1 µs + 1e9 B / 100 GB/s = 10.001 ms.
  EXPECT_NEAR(costs.CollectiveMsAtLevel(Collective::kAllReduce, 1e9, 2, 1), 100.02, 1e-9);
  EXPECT_NEAR(costs.CollectiveMsAtLevel(Collective::kAllReduce, 1e9, 2, 0), 10.001, 1e-9);
  // Level 2, the pod link: 2·10 µs + 1 · 80 ms.
  EXPECT_NEAR(costs.CollectiveMsAtLevel(Collective::kAllReduce, 1e9, 2, 2), 80.02, 1e-9);
}

TEST(CostModel, ProfiledSizesAndReservedMemory) {
  ClusterSpec cluster = Cluster();
  Profile profile = OneLayer();
  ProfileCostModel costs(profile, cluster);
  EXPECT_EQ(costs.MicroBatches(), (std::vector<int>{1, 2}));
  EXPECT_EQ(costs.TensorParallelDegrees(), (std::vector<int>{1}));
  EXPECT_NE(costs.Layer(0, 2, 1, false, 1), nullptr);
  EXPECT_EQ(costs.Layer(0, 4, 1, false, 1), nullptr);
  EXPECT_EQ(costs.ReservedBytes(), int64_t{2} << 30);  // kGpuDefaultOverhead
  EXPECT_EQ(costs.DeviceMemoryBytes(), int64_t{80} << 30);
}

// A profile's load factor scales every layer time the planner reads, and no memory figure.
TEST(CostModel, LayerTimesAreScaledByTheLoadFactor) {
  ClusterSpec cluster = Cluster();
  Profile profile = OneLayer();
  ProfileEntry& e = profile.layers[0].entries[0];
  e.fwd_ms = 2;
  e.bwd_input_ms = 3;
  e.bwd_weight_ms = 4;
  e.recompute_full_ms = 1;
  e.stashed_none_bytes = 1000;
  profile.method.load_factor = 1.25;
  ProfileCostModel costs(profile, cluster);
  const ProfileEntry* scaled = costs.Layer(0, 1, 1, false, 1);
  ASSERT_NE(scaled, nullptr);
  EXPECT_DOUBLE_EQ(scaled->fwd_ms, 2.5);
  EXPECT_DOUBLE_EQ(scaled->bwd_input_ms, 3.75);
  EXPECT_DOUBLE_EQ(scaled->bwd_weight_ms, 5);
  EXPECT_DOUBLE_EQ(scaled->recompute_full_ms, 1.25);
  EXPECT_EQ(scaled->stashed_none_bytes, 1000);
  EXPECT_EQ(profile.layers[0].entries[0].fwd_ms, 2) << "the profile itself is left as it is";
}

}  // namespace
}  // namespace trident
