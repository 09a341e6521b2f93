// trident import deepspeed (launcher/deepspeed_import.h): DeepSpeed's partitions, export-then-
// import round trips, a hand-written ds_config.json, and each refusal naming its key.
#include "launcher/deepspeed_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/file_util.h"
#include "launcher/deepspeed_export.h"
#include "tests/launcher/export_plans.h"

namespace trident {
namespace {

using testing::AsImported;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Llama;
using testing::MakePlan;
using testing::Sharded;
using testing::StageFirstLayers;

// deepspeed/runtime/utils.py's examples, and partition_balanced re-run on small weights.
TEST(DeepSpeedImportTest, PartitionsAsDeepSpeed) {
  EXPECT_THAT(PartitionUniform(10, 4), ElementsAre(0, 3, 6, 8, 10));
  EXPECT_THAT(PartitionUniform(3, 4), ElementsAre(0, 1, 2, 3, 3));
  EXPECT_THAT(PartitionBalanced({1, 1, 1, 1, 1}, 4), ElementsAre(0, 2, 3, 4, 5));
  EXPECT_THAT(PartitionBalanced({5, 0, 0, 5}, 2), ElementsAre(0, 3, 4));
  EXPECT_THAT(PartitionBalanced({0, 1, 1, 1, 1, 0}, 2), ElementsAre(0, 3, 6));
}

DeepSpeedImportOptions OptionsFor(const Plan& plan, const nlohmann::json& pipeline) {
  DeepSpeedImportOptions o;
  o.model = plan.model;
  o.cluster = plan.cluster;
  o.devices = plan.devices;
  o.devices_per_node = plan.devices_per_node;
  o.seq_len = plan.seq_len;
  o.num_stages = pipeline["num_stages"].get<int>();
  o.parts = pipeline["parts"].get<std::vector<int>>();
  return o;
}

TEST(DeepSpeedImportTest, RoundTrips) {
  Plan zero1 = MakePlan(Llama(32), 1, 2, {9, 8, 8, 7});
  zero1.dp_sharding = DpSharding::kOptimizer;
  Plan full = MakePlan(Llama(32), 1, 4, {16, 16});
  for (PlanStage& s : full.stages) s.recompute = RecomputeMode::kFull;
  const Plan flat = MakePlan(Llama(32), 1, 8, {32});
  for (const Plan& plan :
       {zero1, full, MakePlan(Llama(32), 4, 2, {32}), Sharded(flat, DpSharding::kOptimizer),
        Sharded(flat, DpSharding::kGradients), Sharded(flat, DpSharding::kFull),
        Sharded(flat, DpSharding::kFull, 4), Sharded(flat, DpSharding::kFull, 2),
        Sharded(MakePlan(Llama(32), 4, 2, {32}), DpSharding::kFull)}) {
    const DeepSpeedExport out = ExportDeepSpeed(plan, "p.yaml");
    ASSERT_TRUE(out.inexpressible.empty());
    StatusOr<DeepSpeedImport> back =
        ImportDeepSpeed(out.ds_config.dump(), "ds_config.json", OptionsFor(plan, out.pipeline));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(PlanToYaml(back->plan), PlanToYaml(AsImported(plan)));
    EXPECT_THAT(back->ignored, ElementsAre());
  }
}

// Llama 3 8B on 64 H100s in 8 nodes, sequence 8192, `num_stages` uniform stages.
DeepSpeedImportOptions OnH100s(int num_stages) {
  DeepSpeedImportOptions o;
  o.model = Llama(32);
  o.cluster = "dgx-h100";
  o.devices = 64;
  o.devices_per_node = 8;
  o.seq_len = 8192;
  o.num_stages = num_stages;
  o.partition_method = "uniform";
  return o;
}

// The hand-written configuration tests/data/export/`name`, imported with OnH100s(num_stages).
StatusOr<DeepSpeedImport> ImportHandConfig(const std::string& name, int num_stages) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text,
                           ReadFile(std::string(TRIDENT_SOURCE_DIR "/tests/data/export/") + name));
  return ImportDeepSpeed(text, "ds_config.json", OnH100s(num_stages));
}

// DeepSpeed's documented style: two batch keys of three, an optimizer, a scheduler and logging
// keys (listed as ignored), the pipeline section; stages cut by parameters as PipelineModule's
// default does.
TEST(DeepSpeedImportTest, HandWrittenConfig) {
  StatusOr<DeepSpeedImport> imported = ImportHandConfig("llama3-8b-deepspeed-hand.json", 4);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Plan& plan = imported->plan;
  EXPECT_EQ(plan.mesh, (Mesh{16, 4, 1}));
  EXPECT_EQ(plan.micro_batch_size, 2);
  EXPECT_EQ(plan.num_micro_batches, 256);  // 512 / 2: gas 16 on each of 16 replicas
  EXPECT_EQ(plan.dp_sharding, DpSharding::kOptimizer);
  EXPECT_EQ(plan.dtype, DType::kBf16);
  EXPECT_EQ(plan.stages.back().recompute, RecomputeMode::kFull);
  EXPECT_THAT(StageFirstLayers(plan), ElementsAre(0, 9, 18, 27));  // uniform over 35 layers
  EXPECT_THAT(imported->ignored, ElementsAre("gradient_clipping", "optimizer.params",
                                             "optimizer.type", "scheduler.params", "scheduler.type",
                                             "steps_per_print", "wall_clock_breakdown"));
}

// DeepSpeed's ZeRO-3 style with MiCS: stage 3 sharded over groups of 8 ranks (a node),
// replicated across the 8 nodes; its tuning keys listed as ignored.
TEST(DeepSpeedImportTest, HandWrittenZero3MicsConfig) {
  StatusOr<DeepSpeedImport> imported = ImportHandConfig("llama3-8b-deepspeed-zero3-hand.json", 1);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Plan& plan = imported->plan;
  EXPECT_EQ(plan.mesh, (Mesh{64, 1, 1}));
  EXPECT_EQ(plan.dp_sharding, DpSharding::kFull);
  EXPECT_EQ(plan.dp_shard, 8);
  EXPECT_EQ(plan.num_micro_batches, 256);  // 512 / 2: gas 4 on each of 64 replicas
  EXPECT_THAT(imported->ignored,
              ElementsAre("gradient_clipping", "optimizer.params", "optimizer.type",
                          "steps_per_print", "zero_optimization.contiguous_gradients",
                          "zero_optimization.mics_hierarchical_params_gather",
                          "zero_optimization.overlap_comm", "zero_optimization.reduce_bucket_size",
                          "zero_optimization.stage3_param_persistence_threshold",
                          "zero_optimization.stage3_prefetch_bucket_size"));
}

// DeepSpeed's AutoTP training style: tensor_parallel.autotp_size 8 inside a node beside ZeRO-2
// over the 8 replicas, all three batch keys (consistent), no pipeline.
TEST(DeepSpeedImportTest, HandWrittenAutoTpConfig) {
  StatusOr<DeepSpeedImport> imported = ImportHandConfig("llama3-8b-deepspeed-autotp-hand.json", 1);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Plan& plan = imported->plan;
  EXPECT_EQ(plan.devices, 64);
  EXPECT_EQ(plan.mesh, (Mesh{8, 1, 8}));
  EXPECT_FALSE(plan.sequence_parallel);
  EXPECT_EQ(plan.virtual_stages, 1);
  EXPECT_EQ(plan.schedule, ScheduleKind::k1F1B);
  EXPECT_EQ(plan.micro_batch_size, 2);
  EXPECT_EQ(plan.global_batch, 256);
  EXPECT_EQ(plan.num_micro_batches, 128);  // 256 / 2: gas 16 on each of 8 replicas
  EXPECT_EQ(plan.dp_sharding, DpSharding::kGradients);
  EXPECT_EQ(plan.dp_shard, 0);
  EXPECT_EQ(plan.dtype, DType::kBf16);
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_EQ(plan.stages[0].first_layer, 0);
  EXPECT_EQ(plan.stages[0].num_layers, 35);
  EXPECT_EQ(plan.stages[0].replicas, 8);
  EXPECT_EQ(plan.stages[0].recompute, RecomputeMode::kNone);
  EXPECT_THAT(
      imported->ignored,
      ElementsAre("gradient_clipping", "optimizer.params", "optimizer.type", "steps_per_print",
                  "zero_optimization.contiguous_gradients",
                  "zero_optimization.gather_16bit_weights_on_model_save",
                  "zero_optimization.overlap_comm", "zero_optimization.reduce_bucket_size"));
}

// A 4-block Llama in 2 stages on `devices` ranks of one node, sequence 128.
DeepSpeedImportOptions TwoStageLlama(int devices, const std::string& partition_method) {
  DeepSpeedImportOptions o;
  o.model = Llama(4);
  o.devices = devices;
  o.devices_per_node = devices;
  o.seq_len = 128;
  o.num_stages = 2;
  o.partition_method = partition_method;
  return o;
}

TEST(DeepSpeedImportTest, BadConfigsNameTheKey) {
  DeepSpeedImportOptions o = TwoStageLlama(8, "uniform");
  auto error = [&](const std::string& json) {
    StatusOr<DeepSpeedImport> r = ImportDeepSpeed(json, "ds.json", o);
    return r.ok() ? std::string("ok") : r.status().ToString();
  };
  EXPECT_THAT(error("{\"train_batch_size\": 8,"), HasSubstr("ds.json: not a JSON object"));
  EXPECT_THAT(error(R"({"train_batch_size": "8"})"),
              HasSubstr("train_batch_size: expected a whole number"));
  EXPECT_THAT(error(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 1,
                        "gradient_accumulation_steps": 2})"),
              HasSubstr("10 is not train_micro_batch_size_per_gpu 1"));
  EXPECT_THAT(error(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2}})"),
              HasSubstr("zero_optimization.stage: 2 with a pipeline of 2 stages: DeepSpeed's "
                        "pipeline engine refuses ZeRO stages 2 and 3"));
  EXPECT_THAT(error(R"({"train_batch_size": 8, "zero_optimization": {"stage": 4}})"),
              HasSubstr("zero_optimization.stage: 4: 0 to 3"));
  o.num_stages = 1;
  EXPECT_THAT(error(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2,
                        "mics_shard_size": 2}})"),
              HasSubstr("zero_optimization.mics_shard_size: MiCS shards parameters: stage 3"));
  EXPECT_THAT(error(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3,
                        "mics_shard_size": 3}})"),
              HasSubstr("3 does not divide the data-parallel size 8"));
  EXPECT_THAT(error(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2},
                        "zero_optimization": {"stage": 3, "mics_shard_size": 2}})"),
              HasSubstr("with tensor_parallel.autotp_size 2 are not data-parallel replicas"));
  o.num_stages = 2;
  EXPECT_THAT(error(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 3}})"),
              HasSubstr("does not divide the world size 8"));
  EXPECT_THAT(
      error(R"({"train_batch_size": 8, "pipeline": {"activation_checkpoint_interval": 2}})"),
      HasSubstr("pipeline.activation_checkpoint_interval: 2"));
  EXPECT_THAT(error(R"({"train_batch_size": 8, "bf16": {"enabled": "yes"}})"),
              HasSubstr("bf16.enabled: expected true or false"));
  o.partition_method = "type:[";
  EXPECT_THAT(error(R"({"train_batch_size": 8})"), HasSubstr("not a regular expression"));
  o.partition_method = "type:conv";
  EXPECT_THAT(error(R"({"train_batch_size": 8})"), HasSubstr("matches no layer of"));
}

// type:REGEX weighs the layers whose kind name the regex finds (case-insensitive), 1 each:
// "type:Block" spreads the 4 blocks of a Llama over 2 stages, 2 each.
TEST(DeepSpeedImportTest, TypePartitionCountsTheMatchingLayers) {
  DeepSpeedImportOptions o = TwoStageLlama(2, "type:Block");
  StatusOr<DeepSpeedImport> r = ImportDeepSpeed(R"({"train_batch_size": 8})", "ds.json", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->plan.stages.size(), 2u);
  EXPECT_EQ(r->plan.stages[0].first_layer, 0);
  EXPECT_EQ(r->plan.stages[0].num_layers, 3);  // the embedding and 2 blocks
  EXPECT_EQ(r->plan.stages[1].num_layers, 4);  // 2 blocks, the final norm and the head
}

}  // namespace
}  // namespace trident
