// Plan's sharded data parallelism (core/plan.h): dp_sharding and dp_shard as the file writes
// and reads them, plans written with the old zero1 flag, and Plan::Check's rules.
#include <gtest/gtest.h>

#include <string>

#include "core/plan.h"
#include "tests/core/test_values.h"

namespace trident {
namespace {

// TinyPlan (dp 2 × pp 2) with 4 replicas per position instead, for hybrid groups of 2.
Plan FourReplicas() {
  Plan p = testing::TinyPlan();
  p.mesh.dp = 4;
  p.devices = p.devices_per_node = 8;
  for (PlanStage& s : p.stages) s.replicas = 4;
  return p;
}

std::string Written(const Plan& plan, const std::string& key) {
  std::string yaml = PlanToYaml(plan);
  size_t at = yaml.find("\n" + key + ": ");
  if (at == std::string::npos) return "(absent)";
  size_t start = at + key.size() + 3;
  return yaml.substr(start, yaml.find('\n', start) - start);
}

TEST(PlanSharding, WrittenWithEveryLevelAndReadBackEqual) {
  for (DpSharding level :
       {DpSharding::kNone, DpSharding::kOptimizer, DpSharding::kGradients, DpSharding::kFull}) {
    Plan plan = FourReplicas();
    plan.dp_sharding = level;
    if (level != DpSharding::kNone) plan.dp_shard = 2;
    ASSERT_FALSE(plan.Check().has_value()) << FormatFieldError(*plan.Check());
    EXPECT_EQ(Written(plan, "dp_sharding"), NameOf(DpShardingNames(), level));
    EXPECT_EQ(Written(plan, "dp_shard"), level == DpSharding::kNone ? "4" : "2");
    StatusOr<Plan> back = ParsePlan(PlanToYaml(plan), "p.yaml");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, plan);
  }
}

TEST(PlanSharding, WholeGroupIsWrittenAsMeshDpAndReadAsZero) {
  Plan plan = FourReplicas();
  plan.dp_sharding = DpSharding::kFull;
  EXPECT_EQ(Written(plan, "dp_shard"), "4");
  EXPECT_EQ(plan.ShardReplicas(0), 4);
  StatusOr<Plan> back = ParsePlan(PlanToYaml(plan), "p.yaml");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dp_shard, 0);
  plan.dp_shard = 2;
  EXPECT_EQ(plan.ShardReplicas(1), 2);
}

TEST(PlanSharding, TheOldZero1FlagReadsAsOptimizerSharding) {
  std::string yaml = PlanToYaml(testing::TinyPlan());
  const std::string modern = "dp_sharding: none\ndp_shard: 2\n";
  ASSERT_NE(yaml.find(modern), std::string::npos);
  for (auto [flag, level] :
       {std::pair{"true", DpSharding::kOptimizer}, std::pair{"false", DpSharding::kNone}}) {
    std::string old = yaml;
    old.replace(old.find(modern), modern.size(), std::string("zero1: ") + flag + "\n");
    StatusOr<Plan> plan = ParsePlan(old, "old.yaml");
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->dp_sharding, level);
    EXPECT_EQ(plan->dp_shard, 0);
  }
}

TEST(PlanSharding, CheckNamesTheFieldOfEachBadCombination) {
  struct Case {
    const char* what;
    void (*change)(Plan&);
    const char* key;
  };
  const Case cases[] = {
      {"a level with dp 1",
       [](Plan& p) {
         p = testing::TinyPlan();
         p.mesh.dp = 1;
         p.devices = 2;
         for (PlanStage& s : p.stages) s.replicas = 1;
         p.dp_sharding = DpSharding::kGradients;
       },
       "dp_sharding"},
      {"hybrid without a level", [](Plan& p) { p.dp_shard = 2; }, "dp_shard"},
      {"groups of one",
       [](Plan& p) {
         p.dp_sharding = DpSharding::kFull;
         p.dp_shard = 1;
       },
       "dp_shard"},
      {"not dividing dp",
       [](Plan& p) {
         p.dp_sharding = DpSharding::kFull;
         p.dp_shard = 3;
       },
       "dp_shard"},
      {"hybrid with per-stage replicas",
       [](Plan& p) {
         p.dp_sharding = DpSharding::kOptimizer;
         p.dp_shard = 2;
         p.stages[1].replicas = 1;
         p.devices = 5;
       },
       "dp_shard"},
  };
  for (const Case& c : cases) {
    Plan plan = FourReplicas();
    c.change(plan);
    FieldCheck error = plan.Check();
    ASSERT_TRUE(error.has_value()) << c.what;
    EXPECT_EQ(error->key_path, c.key) << c.what << ": " << FormatFieldError(*error);
  }
}

}  // namespace
}  // namespace trident
