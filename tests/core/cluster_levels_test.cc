// The cluster hierarchy: optional links.levels above the node, their reading, writing and
// checks, and the level a range of ranks spans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/cluster.h"
#include "tests/core/test_values.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

// 8 nodes of 4 devices, 2 nodes per pod: 4 pods.
constexpr char kPods[] = R"(format_version: 1
kind: cluster
name: pods
nodes: 8
devices_per_node: 4
device:
  name: Test GPU
  kind: gpu
  memory_gib: 80
  memory_bw_gb_per_s: 2039
  peak_tflops: {bf16: 312}
links:
  intra_node: {bw_gb_per_s: 300, latency_us: 3}
  inter_node: {bw_gb_per_s: 50, latency_us: 5}
  levels:
    - {name: pod, nodes: 2, bw_gb_per_s: 12.5, latency_us: 10}
)";

ClusterSpec Pods() {
  StatusOr<ClusterSpec> c = ParseClusterSpec(kPods, "pods.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ClusterSpec{};
}

// 16 nodes of 2 devices: pods of 2 nodes, racks of 4 pods (8 nodes), 2 racks.
ClusterSpec Racks() {
  ClusterSpec c = testing::TwoNodes();
  c.nodes = 16;
  c.devices_per_node = 2;
  c.levels = {{"pod", 2, {20, 8}}, {"rack", 8, {10, 12}}};
  return c;
}

TEST(ClusterLevels, APlainClusterHasTwoLevels) {
  ClusterSpec c = testing::TwoNodes();  // 2 nodes × 4
  EXPECT_EQ(c.NumLevels(), 2);
  EXPECT_EQ(c.LevelSpanning(0, 0), 0);
  EXPECT_EQ(c.LevelSpanning(0, 3), 0);
  EXPECT_EQ(c.LevelSpanning(4, 7), 0);
  EXPECT_EQ(c.LevelSpanning(3, 4), 1);
  EXPECT_EQ(c.LevelSpanning(0, 7), 1);
  EXPECT_EQ(c.LinkOfLevel(0), c.intra_node);
  EXPECT_EQ(c.LinkOfLevel(1), c.inter_node);
  EXPECT_EQ(c.LevelName(0), "intra_node");
  EXPECT_EQ(c.LevelName(1), "inter_node");
  EXPECT_EQ(c.NodesPerUnit(1), 2);
}

TEST(ClusterLevels, PodsAddALevelAboveTheNode) {
  ClusterSpec c = Pods();
  ASSERT_EQ(c.NumLevels(), 3);
  EXPECT_EQ(c.LevelSpanning(0, 3), 0);   // node 0
  EXPECT_EQ(c.LevelSpanning(0, 7), 1);   // nodes 0-1: pod 0
  EXPECT_EQ(c.LevelSpanning(8, 15), 1);  // nodes 2-3: pod 1
  EXPECT_EQ(c.LevelSpanning(7, 8), 2);   // nodes 1 and 2: pods 0 and 1
  EXPECT_EQ(c.LevelSpanning(0, 15), 2);  // pods 0-1
  EXPECT_EQ(c.LevelSpanning(0, 31), 2);  // the whole cluster
  EXPECT_EQ(c.LinkOfLevel(1), (LinkSpec{50, 5, 1}));
  EXPECT_EQ(c.LinkOfLevel(2), (LinkSpec{12.5, 10, 1}));
  EXPECT_EQ(c.LevelName(2), "pod");
  EXPECT_EQ(c.NodesPerUnit(1), 2);
  EXPECT_EQ(c.NodesPerUnit(2), 8);
}

TEST(ClusterLevels, RacksOfPods) {
  ClusterSpec c = Racks();
  ASSERT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  ASSERT_EQ(c.NumLevels(), 4);
  EXPECT_EQ(c.LevelSpanning(2, 3), 0);    // node 1
  EXPECT_EQ(c.LevelSpanning(1, 2), 1);    // nodes 0-1: pod 0
  EXPECT_EQ(c.LevelSpanning(3, 4), 2);    // pods 0-1: rack 0
  EXPECT_EQ(c.LevelSpanning(0, 15), 2);   // nodes 0-7: rack 0
  EXPECT_EQ(c.LevelSpanning(15, 16), 3);  // racks 0-1
  EXPECT_EQ(c.LevelSpanning(16, 31), 2);  // rack 1
  EXPECT_EQ(c.LinkOfLevel(2), (LinkSpec{20, 8, 1}));
  EXPECT_EQ(c.LinkOfLevel(3), (LinkSpec{10, 12, 1}));
  EXPECT_EQ(c.NodesPerUnit(3), 16);
}

TEST(ClusterLevels, RoundTripKeepsTheLevels) {
  ClusterSpec c = Racks();
  std::string text = ClusterSpecToYaml(c);
  EXPECT_THAT(text, HasSubstr("levels:"));
  StatusOr<ClusterSpec> back = ParseClusterSpec(text, "racks.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(ClusterSpecToYaml(*back), text);
  EXPECT_EQ(ClusterSpecToYaml(testing::TwoNodes()).find("levels"), std::string::npos);
}

// The first problem Validate() reports for `c`.
std::string ErrorOf(const ClusterSpec& c) { return c.Validate().ToString(); }

TEST(ClusterLevels, EachUnitIsAMultipleOfTheOneInsideIt) {
  ClusterSpec c = Racks();
  c.levels[1].nodes = 5;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].nodes: must be a multiple of 2 (the nodes "
                                    "of one 'pod') above it, got 5"));
  EXPECT_THAT(ErrorOf(c), HasSubstr("set nodes to e.g. 4"));
  c.levels[1].nodes = 2;  // a rack of one pod
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].nodes: must be a multiple of 2"));
  c.levels[1].nodes = 8;
  c.levels[0].nodes = 1;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[0].nodes: must be at least 2"));
  c.levels[0].nodes = -2;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[0].nodes: must be at least 2"));
}

TEST(ClusterLevels, TheOutermostUnitDividesTheCluster) {
  ClusterSpec c = Racks();
  c.nodes = 12;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].nodes: units of 8 nodes ('rack') do not "
                                    "divide the cluster's 12 nodes"));
  c.nodes = 8;  // one rack: its link joins nothing, but the hierarchy holds
  EXPECT_TRUE(c.Validate().ok()) << ErrorOf(c);
  EXPECT_EQ(c.LevelSpanning(0, 15), 2);
}

TEST(ClusterLevels, LinksOfLevelsAreChecked) {
  ClusterSpec c = Racks();
  c.levels[1].link.bw_gb_per_s = 0;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].bw_gb_per_s: must be positive"));
  c.levels[1].link.bw_gb_per_s = -3;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].bw_gb_per_s: must be positive"));
  c = Racks();
  c.levels[0].link.latency_us = -1;
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[0].latency_us: must not be negative; hint: "));
}

TEST(ClusterLevels, NamesAreDistinct) {
  ClusterSpec c = Racks();
  c.levels[1].name = "pod";
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].name: duplicate level name 'pod' (also "
                                    "links.levels[0].name)"));
  c.levels[1].name = "inter_node";
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].name: 'inter_node' names a link"));
  c.levels[1].name = "";
  EXPECT_THAT(ErrorOf(c), HasSubstr("links.levels[1].name: must not be empty"));
}

TEST(ClusterLevels, InterNodeFiguresStayInsideTheInnermostUnit) {
  ClusterSpec c = Racks();
  c.measured = {{Collective::kAllReduce, LinkClass::kInterNode, 2, 7, 20}};
  EXPECT_TRUE(c.Validate().ok()) << ErrorOf(c);
  c.measured[0].group_size = 4;  // 4 nodes span two pods
  EXPECT_THAT(ErrorOf(c), HasSubstr("measured[0].group_size: must be between 2 and 2, got 4"));
  EXPECT_THAT(ErrorOf(c), HasSubstr("one 'pod' (2 nodes)"));
}

TEST(ClusterLevels, ErrorsInAFileNameTheFileAndLine) {
  std::string text = kPods;
  text.replace(text.find("nodes: 2,"), 9, "nodes: 3,");
  StatusOr<ClusterSpec> c = ParseClusterSpec(text, "pods.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().ToString(),
              HasSubstr("pods.yaml:16:26: links.levels[0].nodes: units of 3 nodes ('pod') do "
                        "not divide the cluster's 8 nodes; hint: make nodes a multiple of 3 or "
                        "this level's nodes a divisor of 8"));
  text = kPods;
  text.replace(text.find("latency_us: 10"), 14, "latency_us: 10, speed: 4");
  c = ParseClusterSpec(text, "pods.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().ToString(), HasSubstr("pods.yaml:16:"));
  EXPECT_THAT(c.status().ToString(), HasSubstr("links.levels[0].speed: unknown key"));
}

TEST(ClusterLevels, LevelsAreOptionalAndMayBeEmpty) {
  std::string text = kPods;
  text.replace(text.find("  levels:"), std::string::npos, "  levels: []\n");
  StatusOr<ClusterSpec> c = ParseClusterSpec(text, "pods.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->NumLevels(), 2);
  EXPECT_EQ(c->LevelSpanning(0, 31), 1);
}

}  // namespace
}  // namespace trident
