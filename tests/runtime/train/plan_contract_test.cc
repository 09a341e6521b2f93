// The plan contract (runtime/train/plan_contract.h): every field PlanToYaml writes has a role,
// every listed field is written, a plan of executed fields passes on both backends, and every
// restricted field has a plan that the check refuses, naming that field.
#include "runtime/train/plan_contract.h"

#include <functional>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "train_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

// The key paths of every scalar under `node`, lists written "[]".
void CollectPaths(const YAML::Node& node, const std::string& path, std::set<std::string>* out) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      const std::string key = item.first.as<std::string>();
      CollectPaths(item.second, path.empty() ? key : path + "." + key, out);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) CollectPaths(item, path + "[]", out);
  } else {
    out->insert(path);
  }
}

// A plan whose file holds every field the writer can emit: layers with a repeat, predictions
// and provenance.
Plan FullPlan() {
  Plan plan = MakePlan(TinyGpt(2), PlanShape{.replicas = {2, 1}});
  plan.model.layers = {{LayerKind::kEmbedding, 1},
                       {LayerKind::kGptBlock, 2},
                       {LayerKind::kFinalNorm, 1},
                       {LayerKind::kLmHead, 1}};
  plan.predicted = {.step_time_ms = 10, .tokens_per_s = 100, .peak_memory_bytes = 1 << 20};
  plan.provenance = {"1.0", "profile-digest", "cluster-digest"};
  return plan;
}

std::set<std::string> WrittenPaths(const Plan& plan) {
  std::set<std::string> paths;
  CollectPaths(YAML::Load(PlanToYaml(plan)), "", &paths);
  return paths;
}

TEST(PlanContractTest, EveryWrittenFieldHasOneRole) {
  const std::set<std::string> written = WrittenPaths(FullPlan());
  std::set<std::string> listed;
  for (const PlanFieldUse& field : PlanFieldUses()) {
    EXPECT_TRUE(listed.insert(std::string(field.path)).second) << field.path << " listed twice";
    EXPECT_FALSE(field.use.empty()) << field.path;
  }
  for (const std::string& path : written) {
    EXPECT_TRUE(listed.count(path)) << path << " is written by PlanToYaml but has no role in "
                                    << "PlanFieldUses (runtime/train/plan_contract.cc)";
  }
  for (const std::string& path : listed) {
    EXPECT_TRUE(written.count(path)) << path << " has a role but PlanToYaml never writes it";
  }
}

TEST(PlanContractTest, AnExecutedPlanPassesOnBothBackends) {
  for (const char* device : {"cpu", "cuda"}) {
    std::vector<FieldError> refused = CheckPlanContract(FullPlan(), BackendForDevice(device));
    EXPECT_TRUE(refused.empty()) << device << ": " << FormatFieldError(refused.front());
  }
  EXPECT_TRUE(PlanContractStatus(FullPlan(), "p.yaml", BackendForDevice("cpu")).ok());
}

// A change to FullPlan that the backend refuses at `path`, with words of the reason.
struct Refusal {
  std::string path;
  std::string device;
  std::function<void(Plan&)> change;
  std::string reason;
};

std::vector<Refusal> Refusals() {
  return {
      {"model.attention", "cpu", [](Plan& p) { p.model.attention = AttentionKind::kFlash; },
       "flash attention is not implemented"},
      {"model.dropout", "cpu", [](Plan& p) { p.model.dropout = 0.1; }, "not implemented"},
      {"model.layers[].kind", "cpu",
       [](Plan& p) {
         p.model.tied_embeddings = false;
         p.model.layers.back().kind = LayerKind::kMlpBlock;
       },
       "whose last is an lm_head"},
      {"dtype", "cpu", [](Plan& p) { p.dtype = DType::kFp16; },
       "fp16 training (with loss scaling)"},
      {"dp_sharding", "cpu",
       [](Plan& p) {
         p = MakePlan(TinyGpt(2), PlanShape{.schedule = ScheduleKind::kPipeDream,
                                            .replicas = {2, 1},
                                            .num_micro_batches = 4});
         p.dp_sharding = DpSharding::kFull;
       },
       "full sharding is not implemented for pipedream"},
      {"stages[].replicas", "cpu",
       [](Plan& p) {
         p = MakePlan(TinyGpt(2), PlanShape{.schedule = ScheduleKind::kPipeDream,
                                            .replicas = {8, 2, 4, 1, 1},
                                            .num_micro_batches = 8});
       },
       "(deadlock)"},
  };
}

TEST(PlanContractTest, EveryRestrictedFieldHasARefusal) {
  std::map<std::string, int> shown;
  for (const Refusal& r : Refusals()) {
    Plan plan = FullPlan();
    r.change(plan);
    ASSERT_FALSE(plan.Check().has_value()) << r.path << ": " << FormatFieldError(*plan.Check());
    std::vector<FieldError> refused = CheckPlanContract(plan, BackendForDevice(r.device));
    ASSERT_EQ(refused.size(), 1u) << r.path;
    EXPECT_EQ(refused[0].key_path, r.path);
    EXPECT_THAT(refused[0].message, HasSubstr(r.reason)) << r.path;
    ++shown[r.path];
  }
  for (const PlanFieldUse& field : PlanFieldUses()) {
    if (field.role != FieldRole::kRestricted) continue;
    EXPECT_TRUE(shown.count(std::string(field.path))) << field.path << " has no refusal here";
  }
}

TEST(PlanContractTest, EveryShardingLevelRunsOnBothBackendsButNotUnderPipeDream) {
  Plan plan = MakePlan(TinyGpt(2), PlanShape{.replicas = {4}, .num_micro_batches = 4});
  for (DpSharding level : {DpSharding::kOptimizer, DpSharding::kGradients, DpSharding::kFull}) {
    plan.dp_sharding = level;
    for (int dp_shard : {0, 2}) {
      plan.dp_shard = dp_shard;
      EXPECT_TRUE(CheckPlanContract(plan, BackendForDevice("cpu")).empty()) << dp_shard;
      EXPECT_TRUE(CheckPlanContract(plan, BackendForDevice("cuda")).empty()) << dp_shard;
    }
  }
  Plan async = MakePlan(
      TinyGpt(2),
      PlanShape{.schedule = ScheduleKind::kPipeDream, .replicas = {2, 1}, .num_micro_batches = 4});
  async.dp_sharding = DpSharding::kOptimizer;
  std::vector<FieldError> refused = CheckPlanContract(async, BackendForDevice("cpu"));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key_path, "dp_sharding");
  EXPECT_THAT(refused[0].message, HasSubstr("not implemented for pipedream"));
}

// bf16 runs under every layout and sharding level, on both backends; fp16 is refused.
TEST(PlanContractTest, Bf16RunsUnderEveryLayout) {
  for (Plan plan :
       {FullPlan(), MakePlan(TinyGpt(2), PlanShape{.replicas = {4}, .num_micro_batches = 4})}) {
    plan.dtype = DType::kBf16;
    for (DpSharding level : {DpSharding::kNone, DpSharding::kOptimizer, DpSharding::kFull}) {
      plan.dp_sharding = level;
      EXPECT_TRUE(CheckPlanContract(plan, BackendForDevice("cpu")).empty());
      EXPECT_TRUE(CheckPlanContract(plan, BackendForDevice("cuda")).empty());
    }
  }
}

TEST(PlanContractTest, TheCpuRuntimeRunsInterleavedStages) {
  Plan plan = MakePlan(TinyGpt(2), PlanShape{.schedule = ScheduleKind::kInterleaved1F1B,
                                             .replicas = {1, 1},
                                             .virtual_stages = 2});
  EXPECT_TRUE(CheckPlanContract(plan, BackendForDevice("cpu")).empty());
}

TEST(PlanContractTest, TheStatusNamesTheFileTheBackendAndEachField) {
  Plan plan = FullPlan();
  plan.dtype = DType::kFp16;
  plan.model.dropout = 0.1;
  Status status = PlanContractStatus(plan, "p.yaml", BackendForDevice("cuda"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "p.yaml: the cuda runtime cannot run this plan as written:\n"
            "  model.dropout: dropout 0.1 is not implemented by the layers (they train without "
            "dropout); hint: set dropout: 0 in the model and plan again\n"
            "  dtype: fp16 training (with loss scaling) is not implemented by the runtime; "
            "hint: plan again with --dtype bf16 or --dtype fp32");
}

TEST(PlanContractTest, AnInvalidPlanGivesItsCheck) {
  Plan plan = FullPlan();
  plan.stages[0].replicas = 3;  // the mesh says 2
  std::vector<FieldError> refused = CheckPlanContract(plan, BackendForDevice("cpu"));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key_path, plan.Check()->key_path);
}

}  // namespace
}  // namespace trident
