// Every data-model type survives write -> read unchanged, and writing is stable.
#include <gtest/gtest.h>

#include "core/yaml_io.h"
#include "tests/core/test_values.h"

namespace trident {
namespace {

TEST(RoundTrip, ModelSpec) {
  ModelSpec model = testing::TinyGpt();
  std::string text = ModelSpecToYaml(model);
  StatusOr<ModelSpec> back = ParseModelSpec(text, "model.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, model);
  EXPECT_EQ(ModelSpecToYaml(*back), text);
}

TEST(RoundTrip, ClusterSpec) {
  ClusterSpec cluster = testing::TwoNodes();
  std::string text = ClusterSpecToYaml(cluster);
  StatusOr<ClusterSpec> back = ParseClusterSpec(text, "cluster.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, cluster);
  EXPECT_EQ(ClusterSpecToYaml(*back), text);
}

TEST(RoundTrip, Profile) {
  Profile profile = testing::TinyProfile();
  std::string text = ProfileToYaml(profile);
  StatusOr<Profile> back = ParseProfile(text, "profile.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, profile);
  EXPECT_EQ(ProfileToYaml(*back), text);
}

// Files written before the load factor read as 1; a factor below 1 is refused with its key.
TEST(RoundTrip, ProfileLoadFactorIsOptionalAndAtLeastOne) {
  std::string text = ProfileToYaml(testing::TinyProfile());
  const std::string line = "  load_factor: 1.25\n";
  ASSERT_NE(text.find(line), std::string::npos) << text;
  std::string without = text;
  without.erase(without.find(line), line.size());
  StatusOr<Profile> old = ParseProfile(without, "old.yaml");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->method.load_factor, 1);
  std::string low = text;
  low.replace(low.find(line), line.size(), "  load_factor: 0.5\n");
  StatusOr<Profile> refused = ParseProfile(low, "low.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("low.yaml"), std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("method.load_factor"), std::string::npos)
      << refused.status().ToString();
}

TEST(RoundTrip, Plan) {
  Plan plan = testing::TinyPlan();
  std::string text = PlanToYaml(plan);
  StatusOr<Plan> back = ParsePlan(text, "plan.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, plan);
  EXPECT_EQ(PlanToYaml(*back), text);
}

TEST(RoundTrip, DoublesKeepEveryBit) {
  ClusterSpec cluster = testing::TwoNodes();
  cluster.device.memory_gib = 0.1 + 0.2;  // not exactly representable in short decimal
  cluster.intra_node.latency_us = 1.0 / 3.0;
  StatusOr<ClusterSpec> back = ParseClusterSpec(ClusterSpecToYaml(cluster), "c.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->device.memory_gib, cluster.device.memory_gib);
  EXPECT_EQ(back->intra_node.latency_us, cluster.intra_node.latency_us);
}

TEST(RoundTrip, ExponentsFollowADecimalPoint) {
  EXPECT_EQ(FormatDouble(3e-4), "3.0e-04");
  EXPECT_EQ(FormatDouble(1.5e-7), "1.5e-07");
  EXPECT_EQ(FormatDouble(2e22), "2.0e+22");
  EXPECT_EQ(FormatDouble(0.25), "0.25");
  EXPECT_EQ(FormatDouble(3), "3");
}

TEST(Profile, FindCoversSharedBlocks) {
  Profile profile = testing::TinyProfile();
  ASSERT_NE(profile.Find(2, 1, 1, false, 1), nullptr);
  EXPECT_EQ(profile.Find(2, 1, 1, false, 1), profile.Find(1, 1, 1, false, 1));
  EXPECT_NE(profile.Find(2, 2, 2, false, 1), nullptr);
  EXPECT_EQ(profile.Find(0, 2, 2, false, 1), nullptr);
  EXPECT_EQ(profile.Find(5, 1, 1, false, 1), nullptr);
  // Entries are keyed by cp too: the blocks' cp 2 entry is its own, the embedding has none.
  ASSERT_NE(profile.Find(2, 1, 1, false, 2), nullptr);
  EXPECT_EQ(profile.Find(2, 1, 1, false, 2)->cp, 2);
  EXPECT_EQ(profile.Find(0, 1, 1, false, 2), nullptr);
}

}  // namespace
}  // namespace trident
