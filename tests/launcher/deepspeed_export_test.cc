// trident export --to deepspeed (launcher/deepspeed_export.h): every plan field has a mapping,
// the configuration and partition of a pipeline plan, AutoTP without a pipeline, and each
// choice DeepSpeed cannot express refused with its field.
#include "launcher/deepspeed_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/plan_fields.h"
#include "tests/launcher/export_plans.h"

namespace trident {
namespace {

using ::testing::ElementsAre;
using testing::ExpectGolden;
using testing::Gpt;
using ::testing::HasSubstr;
using testing::KeyPaths;
using testing::Llama;
using testing::MakePlan;
using testing::Sharded;
using testing::WithContextParallel;

std::vector<std::string> Inexpressible(const Plan& plan) {
  return KeyPaths(ExportDeepSpeed(plan, "p.yaml").inexpressible);
}

TEST(DeepSpeedExportTest, EveryPlanFieldHasAMapping) {
  std::set<std::string> fields, mapped;
  for (const PlanFieldUse& f : PlanFieldUses()) fields.insert(std::string(f.path));
  for (const auto& [path, how] : DeepSpeedFieldMapping()) mapped.insert(std::string(path));
  EXPECT_EQ(mapped, fields) << "core/plan_fields.cc and launcher/deepspeed_fields.cc disagree";
}

TEST(DeepSpeedExportTest, PipelinePlan) {
  Plan plan = MakePlan(Llama(32), 1, 2, {9, 8, 8, 7});
  plan.dp_sharding = DpSharding::kOptimizer;
  for (PlanStage& s : plan.stages) s.recompute = RecomputeMode::kFull;
  const DeepSpeedExport out = ExportDeepSpeed(plan, "p.yaml");
  EXPECT_TRUE(out.inexpressible.empty());
  EXPECT_EQ(out.ds_config, nlohmann::json::parse(R"({
      "train_batch_size": 32, "train_micro_batch_size_per_gpu": 1,
      "gradient_accumulation_steps": 16, "zero_optimization": {"stage": 1},
      "bf16": {"enabled": true}, "pipeline": {"activation_checkpoint_interval": 1}})"));
  EXPECT_EQ(out.pipeline, nlohmann::json::parse(R"({
      "num_stages": 4, "parts": [0, 10, 18, 26, 35]})"));
  EXPECT_THAT(out.launch, HasSubstr("exec deepspeed --num_nodes 1 --num_gpus 8 "));
}

// Every key written is DeepSpeed's; the whole export of a pipeline plan against golden files.
TEST(DeepSpeedExportTest, FilesMatchGoldenAndKeysAreDeepSpeeds) {
  Plan plan = MakePlan(Llama(32), 1, 2, {9, 8, 8, 7});
  for (PlanStage& s : plan.stages) s.recompute = RecomputeMode::kFull;
  const DeepSpeedExport out = ExportDeepSpeed(plan, "plan.yaml");
  ASSERT_TRUE(out.inexpressible.empty());
  const auto& keys = DeepSpeedKeys();
  for (const auto& [key, value] : out.ds_config.items()) {
    if (!value.is_object()) {
      EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
      continue;
    }
    for (const auto& [inner, unused] : value.items()) {
      EXPECT_NE(std::find(keys.begin(), keys.end(), key + "." + inner), keys.end())
          << key << "." << inner;
    }
  }
  const std::string dir = TRIDENT_SOURCE_DIR "/tests/data/export/llama-deepspeed/";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"ds_config.json", out.ds_config.dump(2) + "\n"},  // as trident export writes JSON
      {"pipeline.json", out.pipeline.dump(2) + "\n"},
      {"launch.sh", out.launch}};
  for (const auto& [name, text] : files) ExpectGolden(dir + name, text);
}

TEST(DeepSpeedExportTest, TensorParallelismIsAutoTpWithoutAPipeline) {
  const DeepSpeedExport out = ExportDeepSpeed(MakePlan(Gpt(24), 4, 2, {24}), "p.yaml");
  EXPECT_TRUE(out.inexpressible.empty());
  EXPECT_EQ(out.ds_config["tensor_parallel"], nlohmann::json::parse(R"({"autotp_size": 4})"));
  EXPECT_EQ(out.ds_config["pipeline"]["activation_checkpoint_interval"], 0);
}

// zero_optimization.stage is the level; MiCS's mics_shard_size the hybrid groups of stage 3;
// without a pipeline the training script gives DeepSpeed the model itself.
TEST(DeepSpeedExportTest, ShardingLevelsAreZeroStagesAndHybridIsMics) {
  const Plan base = MakePlan(Llama(32), 1, 8, {32});
  const std::vector<DpSharding> levels = {DpSharding::kNone, DpSharding::kOptimizer,
                                          DpSharding::kGradients, DpSharding::kFull};
  for (size_t stage = 0; stage < levels.size(); ++stage) {
    const DeepSpeedExport out = ExportDeepSpeed(Sharded(base, levels[stage]), "p.yaml");
    EXPECT_TRUE(out.inexpressible.empty()) << stage;
    EXPECT_EQ(out.ds_config["zero_optimization"], nlohmann::json({{"stage", stage}}));
    EXPECT_EQ(out.launch.find("not a PipelineModule") != std::string::npos, stage >= 2) << stage;
  }
  const DeepSpeedExport mics = ExportDeepSpeed(Sharded(base, DpSharding::kFull, 4), "p.yaml");
  EXPECT_TRUE(mics.inexpressible.empty());
  EXPECT_EQ(mics.ds_config["zero_optimization"],
            nlohmann::json::parse(R"({"stage": 3, "mics_shard_size": 4})"));
  EXPECT_THAT(mics.launch, HasSubstr("deepspeed.zero.MiCS_Init"));
}

TEST(DeepSpeedExportTest, ChoicesDeepSpeedCannotExpressNameTheirField) {
  EXPECT_THAT(Inexpressible(Sharded(MakePlan(Gpt(8), 1, 2, {4, 4}), DpSharding::kGradients)),
              ElementsAre("dp_sharding"));
  EXPECT_THAT(Inexpressible(Sharded(MakePlan(Gpt(8), 1, 2, {4, 4}), DpSharding::kFull)),
              ElementsAre("dp_sharding"));
  EXPECT_THAT(Inexpressible(Sharded(MakePlan(Gpt(8), 1, 8, {8}), DpSharding::kOptimizer, 4)),
              ElementsAre("dp_shard"));
  EXPECT_THAT(Inexpressible(Sharded(MakePlan(Gpt(8), 2, 4, {8}), DpSharding::kFull, 2)),
              ElementsAre("dp_shard"));
  EXPECT_THAT(Inexpressible(MakePlan(Gpt(8), 2, 1, {4, 4})), ElementsAre("mesh.tp"));
  Plan sequence_parallel = MakePlan(Gpt(8), 2, 1, {8});
  sequence_parallel.sequence_parallel = true;
  EXPECT_THAT(Inexpressible(sequence_parallel), ElementsAre("sequence_parallel"));
  EXPECT_THAT(Inexpressible(WithContextParallel(MakePlan(Gpt(8), 1, 1, {8}), 8)),
              ElementsAre("mesh.cp"));
  EXPECT_THAT(Inexpressible(MakePlan(Gpt(8), 1, 1, {4, 4}, 1, ScheduleKind::kGpipe)),
              ElementsAre("schedule"));
  EXPECT_THAT(
      Inexpressible(MakePlan(Gpt(8), 1, 1, {2, 2, 2, 2}, 2, ScheduleKind::kInterleaved1F1B)),
      ElementsAre("virtual_stages"));
  Plan selective = MakePlan(Gpt(8), 1, 1, {4, 4});
  for (PlanStage& s : selective.stages) s.recompute = RecomputeMode::kSelective;
  EXPECT_THAT(Inexpressible(selective), ElementsAre("stages[].recompute"));
  Plan mixed = MakePlan(Gpt(8), 1, 1, {4, 4});
  mixed.stages[1].recompute = RecomputeMode::kFull;
  EXPECT_THAT(Inexpressible(mixed), ElementsAre("stages[].recompute"));
  Plan replicas = MakePlan(Gpt(8), 1, 2, {4, 4});
  replicas.stages[1].replicas = 1;
  replicas.devices = 3;
  EXPECT_THAT(Inexpressible(replicas), ElementsAre("stages[].replicas"));
}

}  // namespace
}  // namespace trident
