// trident export --to torchtitan and trident import torchtitan (launcher/torchtitan_export.h,
// torchtitan_import.h): every plan field mapped, every written key torchtitan's, the flavors
// against Trident's presets, the job file against a golden one, export-then-import round trips
// for each schedule, mesh and recompute torchtitan can run, torchtitan's own split points, a
// hand-written job file, and each refusal naming its field or key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "core/file_util.h"
#include "core/plan_fields.h"
#include "launcher/torchtitan_export.h"
#include "launcher/torchtitan_import.h"
#include "tests/launcher/export_plans.h"

namespace trident {
namespace {

using testing::AsImported;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::ExpectGolden;
using ::testing::Field;
using testing::Gpt;
using ::testing::HasSubstr;
using testing::KeyPaths;
using testing::Llama;
using testing::MakePlan;
using testing::Sharded;
using testing::StageFirstLayers;
using testing::StageLayerCounts;
using testing::WithContextParallel;

std::vector<std::string> Inexpressible(const Plan& plan) {
  return KeyPaths(ExportTorchtitan(plan, "p.yaml").inexpressible);
}

// A plan torchtitan runs: fp32 unless data parallelism alone.
Plan Runnable(int tp, int dp, std::vector<int> blocks, int v = 1,
              ScheduleKind schedule = ScheduleKind::k1F1B) {
  Plan plan = MakePlan(Llama(32), tp, dp, std::move(blocks), v, schedule);
  plan.sequence_parallel = tp > 1;  // torchtitan's tensor parallelism always is
  if (tp > 1 || plan.mesh.pp > 1) {
    plan.dtype = DType::kFp32;
    plan.model.dtype = DType::kFp32;
  }
  return plan;
}

StatusOr<TorchtitanImport> Import(const std::string& toml, int devices) {
  return ImportTorchtitan(toml, "job.toml", {"test", devices, std::min(devices, 8)});
}

// What the import lists as ignored in the hand-written job files that train with checkpoints,
// metrics and a warm-up (their keys outside a plan).
const std::vector<std::string> kTrainingJobIgnored = {"checkpoint.enable_checkpoint",
                                                      "checkpoint.interval",
                                                      "job.dump_folder",
                                                      "lr_scheduler.warmup_steps",
                                                      "metrics.log_freq",
                                                      "model.tokenizer_path",
                                                      "optimizer.lr",
                                                      "optimizer.name",
                                                      "parallelism.enable_async_tensor_parallel",
                                                      "training.dataset",
                                                      "training.max_norm",
                                                      "training.steps"};

// The hand-written job file tests/data/export/`name`, imported for 64 devices.
StatusOr<TorchtitanImport> ImportHandFile(const std::string& name) {
  StatusOr<std::string> text = ReadFile(TRIDENT_SOURCE_DIR "/tests/data/export/" + name);
  if (!text.ok()) return text.status();
  return Import(*text, 64);
}

// `plan` as the torchtitan import gives it back: with torchtitan's max_seq_len too.
Plan AsTorchtitanImported(const Plan& plan) {
  Plan back = AsImported(plan);
  back.model.max_seq_len = plan.seq_len;
  return back;
}

TEST(TorchtitanExportTest, EveryPlanFieldHasAMapping) {
  std::set<std::string> fields, mapped;
  for (const PlanFieldUse& f : PlanFieldUses()) fields.insert(std::string(f.path));
  for (const auto& [path, how] : TorchtitanFieldMapping()) mapped.insert(std::string(path));
  EXPECT_EQ(mapped, fields) << "core/plan_fields.cc and launcher/torchtitan_fields.cc disagree";
}

TEST(TorchtitanExportTest, EveryWrittenKeyIsTorchtitans) {
  const TorchtitanExport out =
      ExportTorchtitan(Runnable(2, 1, {7, 9, 8, 8}, 2, ScheduleKind::kInterleaved1F1B), "p.yaml");
  ASSERT_TRUE(out.inexpressible.empty());
  const toml::table job = toml::parse(out.toml);
  const auto& keys = TorchtitanKeys();
  int written = 0;
  for (const auto& [section, node] : job) {
    ASSERT_TRUE(node.is_table()) << section.str();
    for (const auto& [key, value] : *node.as_table()) {
      const std::string path = std::string(section.str()) + "." + std::string(key.str());
      EXPECT_NE(std::find(keys.begin(), keys.end(), path), keys.end()) << path;
      ++written;
    }
  }
  EXPECT_EQ(written, 16);
}

// torchtitan's FeedForward width: 4·dim·2/3, times the multiplier, up to a multiple; and each
// flavor is Trident's preset of that name.
TEST(TorchtitanExportTest, FlavorsAreTheLlama3Presets) {
  auto ffn = [](int64_t dim, double multiplier, int64_t multiple) {
    const int64_t hidden = static_cast<int64_t>(multiplier * static_cast<double>(2 * 4 * dim / 3));
    return multiple * ((hidden + multiple - 1) / multiple);
  };
  const std::vector<int64_t> expected = {ffn(4096, 1.3, 1024), ffn(8192, 1.3, 4096),
                                         ffn(16384, 1.2, 4096)};
  ASSERT_EQ(TorchtitanFlavors().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const ModelSpec& flavor = TorchtitanFlavors()[i].model;
    EXPECT_EQ(flavor.ffn_hidden, expected[i]);
    StatusOr<ModelSpec> preset =
        LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/" + flavor.name + ".yaml");
    ASSERT_TRUE(preset.ok()) << preset.status().ToString();
    preset->max_seq_len = flavor.max_seq_len;
    EXPECT_EQ(*preset, flavor) << flavor.name;
  }
}

TEST(TorchtitanExportTest, JobFileMatchesGolden) {
  Plan plan = Runnable(2, 1, {7, 9, 8, 8}, 2, ScheduleKind::kInterleaved1F1B);
  for (PlanStage& s : plan.stages) s.recompute = RecomputeMode::kFull;
  const TorchtitanExport out = ExportTorchtitan(plan, "plan.yaml");
  ASSERT_TRUE(out.inexpressible.empty());
  ExpectGolden(TRIDENT_SOURCE_DIR "/tests/data/export/llama-torchtitan.toml", out.toml);
}

TEST(TorchtitanExportTest, RoundTripsEveryRunnableChoice) {
  std::vector<Plan> plans = {
      Runnable(1, 8, {32}),                               // DDP, bf16
      Runnable(4, 1, {32}),                               // tp alone
      Runnable(1, 1, {9, 8, 8, 7}),                       // 1F1B, uneven
      Runnable(2, 1, {16, 16}, 1, ScheduleKind::kGpipe),  // GPipe
      Runnable(1, 1, {4, 4, 4, 4, 4, 4, 4, 4}, 2, ScheduleKind::kInterleaved1F1B),
      Runnable(1, 1, {0, 16, 16}),  // embedding alone
  };
  // Context parallelism: torchtitan applies FSDP over the cp ranks, which takes bf16 too.
  Plan context = WithContextParallel(MakePlan(Llama(32), 2, 1, {32}), 4);
  context.sequence_parallel = true;
  plans.push_back(context);
  Plan full = Runnable(1, 2, {32});
  for (PlanStage& s : full.stages) s.recompute = RecomputeMode::kFull;
  plans.push_back(full);
  // FSDP and HSDP, alone and beside tp and pp, in bf16 (applied through FSDP).
  auto fsdp = [](int tp, int dp, std::vector<int> blocks, int dp_shard) {
    Plan plan = MakePlan(Llama(32), tp, dp, std::move(blocks));
    plan.sequence_parallel = tp > 1;
    return Sharded(plan, DpSharding::kFull, dp_shard);
  };
  plans.push_back(fsdp(1, 8, {32}, 0));
  plans.push_back(fsdp(1, 8, {32}, 4));
  plans.push_back(fsdp(2, 4, {32}, 0));
  plans.push_back(fsdp(1, 2, {16, 16}, 0));
  plans.push_back(fsdp(2, 4, {9, 8, 8, 7}, 2));
  plans.push_back(Sharded(WithContextParallel(fsdp(2, 4, {32}, 0), 2), DpSharding::kFull, 2));
  for (const Plan& plan : plans) {
    const TorchtitanExport out = ExportTorchtitan(plan, "p.yaml");
    ASSERT_TRUE(out.inexpressible.empty()) << FormatFieldError(out.inexpressible.front());
    StatusOr<TorchtitanImport> back = Import(out.toml, plan.devices);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(PlanToYaml(back->plan), PlanToYaml(AsTorchtitanImported(plan)));
    EXPECT_THAT(back->ignored, ElementsAre()) << "job.description is read as a plan key";
  }
}

TEST(TorchtitanExportTest, ChoicesTorchtitanCannotExpressNameTheirField) {
  EXPECT_THAT(Inexpressible(MakePlan(Gpt(8), 1, 2, {8})), ElementsAre("model.name"));
  Plan zero1 = Runnable(1, 2, {32});
  zero1.dp_sharding = DpSharding::kOptimizer;
  EXPECT_THAT(Inexpressible(zero1), ElementsAre("dp_sharding"));
  EXPECT_THAT(Inexpressible(Sharded(Runnable(1, 2, {32}), DpSharding::kGradients)),
              ElementsAre("dp_sharding"));
  EXPECT_THAT(Inexpressible(Runnable(2, 2, {32})), ElementsAre("mesh.dp"));
  Plan whole_norms = Runnable(2, 1, {32});
  whole_norms.sequence_parallel = false;
  EXPECT_THAT(Inexpressible(whole_norms), ElementsAre("sequence_parallel"));
  EXPECT_THAT(Inexpressible(MakePlan(Llama(32), 1, 1, {16, 16})), ElementsAre("dtype"));
  EXPECT_THAT(Inexpressible(Runnable(1, 1, {16, 16}, 1, ScheduleKind::kZbH1)),
              ElementsAre("schedule"));
  Plan selective = Runnable(1, 2, {32});
  for (PlanStage& s : selective.stages) s.recompute = RecomputeMode::kSelective;
  EXPECT_THAT(Inexpressible(selective), ElementsAre("stages[].recompute"));
  Plan norm_cut = Runnable(1, 1, {32, 0});
  EXPECT_THAT(Inexpressible(norm_cut), ElementsAre("stages[].first_layer"));
}

// torchtitan's generate_split_points: Llama 3 8B on 4 ranks under 1F1B starts stages at
// layers.8, .17 and .25 (the embedding and the output weigh a block each).
TEST(TorchtitanImportTest, GeneratesTorchtitansSplitPoints) {
  EXPECT_THAT(*TorchtitanSplitPoints(32, 4, true, 0), ElementsAre(8, 17, 25));
  EXPECT_THAT(*TorchtitanSplitPoints(32, 2, false, 0), ElementsAre(8, 17, 25));
  EXPECT_THAT(*TorchtitanSplitPoints(16, 2, false, 3), ElementsAre(2, 5, 8, 11, 14));
  EXPECT_FALSE(TorchtitanSplitPoints(16, 2, true, 3).ok());
  StatusOr<TorchtitanImport> generated = Import(R"(
      [model]
      flavor = "8B"
      [parallelism]
      pipeline_parallel_degree = 4
      data_parallel_shard_degree = 1
      [activation_checkpoint]
      mode = "none")",
                                                4);
  ASSERT_TRUE(generated.ok()) << generated.status().ToString();
  EXPECT_THAT(StageFirstLayers(generated->plan), ElementsAre(0, 9, 18, 26));
  EXPECT_EQ(generated->plan.dtype, DType::kFp32) << "no FSDP: torchtitan trains fp32 with pp";
  EXPECT_EQ(generated->plan.num_micro_batches, 8);  // local_batch_size 8 of micro-batches of 1
}

// torchtitan's default shard degree (-1, the ranks left) is FSDP over them; a replicate degree
// beside a shard degree is HSDP, Trident's hybrid sharding, and FSDP applies bf16 beside tp.
TEST(TorchtitanImportTest, ShardDegreesAreFullSharding) {
  StatusOr<TorchtitanImport> fsdp =
      Import("[model]\nflavor = \"8B\"\n[activation_checkpoint]\nmode = \"none\"", 8);
  ASSERT_TRUE(fsdp.ok()) << fsdp.status().ToString();
  EXPECT_EQ(fsdp->plan.mesh, (Mesh{8, 1, 1}));
  EXPECT_EQ(fsdp->plan.dp_sharding, DpSharding::kFull);
  EXPECT_EQ(fsdp->plan.dp_shard, 0);
  StatusOr<TorchtitanImport> hsdp = Import(R"(
      [model]
      flavor = "8B"
      [parallelism]
      data_parallel_replicate_degree = 2
      data_parallel_shard_degree = 4
      tensor_parallel_degree = 2
      [activation_checkpoint]
      mode = "full")",
                                           16);
  ASSERT_TRUE(hsdp.ok()) << hsdp.status().ToString();
  EXPECT_EQ(hsdp->plan.mesh, (Mesh{8, 1, 2}));
  EXPECT_EQ(hsdp->plan.dp_sharding, DpSharding::kFull);
  EXPECT_EQ(hsdp->plan.dp_shard, 4);
  EXPECT_EQ(hsdp->plan.dtype, DType::kBf16);
  EXPECT_TRUE(hsdp->plan.sequence_parallel);
}

TEST(TorchtitanImportTest, HandWrittenJobFile) {
  StatusOr<TorchtitanImport> imported = ImportHandFile("llama3-70b-torchtitan-hand.toml");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Plan& plan = imported->plan;
  EXPECT_EQ(plan.model.name, "llama3-70b");
  EXPECT_EQ(plan.mesh, (Mesh{1, 8, 8}));
  EXPECT_EQ(plan.virtual_stages, 2);
  EXPECT_EQ(plan.schedule, ScheduleKind::kInterleaved1F1B);
  EXPECT_EQ(plan.global_batch, 64);
  EXPECT_EQ(plan.num_micro_batches, 64);
  EXPECT_EQ(plan.stages.front().recompute, RecomputeMode::kFull);
  EXPECT_THAT(imported->ignored, ElementsAreArray(kTrainingJobIgnored));
}

TEST(TorchtitanImportTest, HandWrittenHsdpJobFile) {
  StatusOr<TorchtitanImport> imported = ImportHandFile("llama3-8b-torchtitan-hsdp-hand.toml");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Plan& plan = imported->plan;
  EXPECT_EQ(plan.mesh, (Mesh{64, 1, 1}));
  EXPECT_EQ(plan.dp_sharding, DpSharding::kFull);
  EXPECT_EQ(plan.dp_shard, 8);
  EXPECT_EQ(plan.dtype, DType::kBf16);
  EXPECT_EQ(plan.num_micro_batches, 512);
  EXPECT_THAT(
      imported->ignored,
      ElementsAre("job.dump_folder", "model.tokenizer_path", "optimizer.lr", "optimizer.name",
                  "training.compile", "training.dataset", "training.max_norm", "training.steps"));
}

// Every parallelism torchtitan has for a dense model in one job file: FSDP, context, tensor and
// a 1F1B pipeline cut at explicit split points.
TEST(TorchtitanImportTest, HandWrittenContextAndPipelineJobFile) {
  StatusOr<TorchtitanImport> imported =
      ImportHandFile("llama3-8b-torchtitan-cp-pipeline-hand.toml");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const Plan& plan = imported->plan;
  EXPECT_EQ(plan.model.name, "llama3-8b");
  EXPECT_EQ(plan.devices, 64);
  EXPECT_EQ(plan.mesh, (Mesh{4, 4, 2, 2}));
  EXPECT_TRUE(plan.sequence_parallel);  // torchtitan's tensor parallelism always is
  EXPECT_EQ(plan.dp_sharding, DpSharding::kFull);
  EXPECT_EQ(plan.dp_shard, 0);  // no replicate degree: one shard group
  EXPECT_EQ(plan.virtual_stages, 1);
  EXPECT_EQ(plan.schedule, ScheduleKind::k1F1B);
  EXPECT_EQ(plan.micro_batch_size, 1);
  EXPECT_EQ(plan.global_batch, 32);
  EXPECT_EQ(plan.num_micro_batches, 32);
  EXPECT_EQ(plan.seq_len, 8192);
  EXPECT_EQ(plan.dtype, DType::kBf16);
  // Split before blocks 7, 16 and 25: 7, 9, 9 and 7 blocks, the embedding on the first stage,
  // the final norm and the output layer on the last.
  EXPECT_THAT(StageLayerCounts(plan), ElementsAre(8, 9, 9, 9));
  EXPECT_THAT(StageFirstLayers(plan), ElementsAre(0, 8, 17, 26));
  EXPECT_THAT(plan.stages, Each(Field(&PlanStage::recompute, RecomputeMode::kFull)));
  EXPECT_THAT(plan.stages, Each(Field(&PlanStage::replicas, 4)));
  EXPECT_THAT(imported->ignored, ElementsAreArray(kTrainingJobIgnored));
}

TEST(TorchtitanImportTest, BadFilesNameTheKey) {
  auto error = [](const std::string& toml, int devices = 8) {
    StatusOr<TorchtitanImport> r = Import(toml, devices);
    return r.ok() ? std::string("ok") : r.status().ToString();
  };
  EXPECT_THAT(error("[model\nflavor = 1"), HasSubstr("job.toml:1:"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 1\n"
                    "[training]\nseq_len = \"long\"",
                    1),
              HasSubstr("training.seq_len: expected a whole number"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\"\n[parallelism]\ntensor_parallel_degree = 3\n"
                    "data_parallel_shard_degree = 1"),
              HasSubstr("is not the world size 8"));
  EXPECT_THAT(error("[model]\nflavor = \"13B\""), HasSubstr("model.flavor: llama3 13B"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\""),
              HasSubstr("activation_checkpoint.mode: selective"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\"\n[parallelism]\nfsdp_reshard_after_forward = "
                    "\"sometimes\""),
              HasSubstr("fsdp_reshard_after_forward: sometimes: default, always or never"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 1\n"
                    "data_parallel_replicate_degree = 4\ntensor_parallel_degree = 2"),
              HasSubstr("refuses DDP beside"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 1\n"
                    "data_parallel_replicate_degree = 8"),
              HasSubstr("activation_checkpoint.mode: selective"));
  EXPECT_THAT(error("[model]\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 1\n"
                    "pipeline_parallel_degree = 2\npipeline_parallel_split_points = [\"norm\"]\n"
                    "[activation_checkpoint]\nmode = \"none\"",
                    2),
              HasSubstr("'norm' is not layers.K"));
}

}  // namespace
}  // namespace trident
