// trident export --to megatron (launcher/megatron_export.h): every plan field has a mapping,
// every written flag is one of the pinned Megatron-LM version's, the model and parallel
// arguments of GPT and Llama plans, the three ways of saying stage cuts, each choice Megatron
// cannot express refused with its field, and the script against a golden file.
#include "launcher/megatron_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/plan_fields.h"
#include "tests/launcher/export_plans.h"

namespace trident {
namespace {

using testing::ExpectGolden;
using testing::Gpt;
using testing::KeyPaths;
using testing::Llama;
using testing::MakePlan;
using testing::Sharded;
using testing::WithContextParallel;

using ::testing::ElementsAre;
using ::testing::IsSubsetOf;

// The flags of `args` (the words that start with "--").
std::vector<std::string> Flags(const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) == 0) flags.push_back(a);
  }
  return flags;
}

// The value after `flag`, or "" when absent.
std::string ValueOf(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

std::vector<std::string> Inexpressible(const Plan& plan) {
  return KeyPaths(ExportMegatron(plan).inexpressible);
}

TEST(MegatronExportTest, EveryPlanFieldHasAMapping) {
  std::set<std::string> fields, mapped;
  for (const PlanFieldUse& f : PlanFieldUses()) fields.insert(std::string(f.path));
  for (const auto& [path, how] : MegatronFieldMapping()) {
    mapped.insert(std::string(path));
    EXPECT_FALSE(how.empty()) << path;
  }
  EXPECT_EQ(mapped, fields) << "core/plan_fields.cc and launcher/megatron_fields.cc disagree";
}

TEST(MegatronExportTest, GptOnOneStage) {
  const MegatronExport out = ExportMegatron(MakePlan(Gpt(24), 2, 4, {24}));
  EXPECT_TRUE(out.inexpressible.empty());
  EXPECT_THAT(
      out.model_args,
      ElementsAre("--num-layers", "24", "--hidden-size", "2048", "--num-attention-heads", "16",
                  "--ffn-hidden-size", "8192", "--seq-length", "2048", "--max-position-embeddings",
                  "2048", "--normalization", "LayerNorm", "--norm-epsilon", "1e-05",
                  "--position-embedding-type", "learned_absolute", "--attention-backend", "unfused",
                  "--hidden-dropout", "0.1", "--attention-dropout", "0.1"));
  EXPECT_THAT(out.parallel_args,
              ElementsAre("--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size",
                          "1", "--micro-batch-size", "1", "--global-batch-size", "16", "--bf16"));
}

TEST(MegatronExportTest, LlamaWithGqaRopeRecomputeAndZero1) {
  Plan plan = MakePlan(Llama(32), 8, 2, {8, 8, 8, 8});
  plan.dp_sharding = DpSharding::kOptimizer;
  plan.sequence_parallel = true;
  for (PlanStage& s : plan.stages) s.recompute = RecomputeMode::kFull;
  const MegatronExport out = ExportMegatron(plan);
  EXPECT_TRUE(out.inexpressible.empty());
  EXPECT_EQ(ValueOf(out.model_args, "--num-query-groups"), "8");
  EXPECT_EQ(ValueOf(out.model_args, "--normalization"), "RMSNorm");
  EXPECT_EQ(ValueOf(out.model_args, "--position-embedding-type"), "rope");
  EXPECT_EQ(ValueOf(out.model_args, "--rotary-base"), "500000");
  EXPECT_THAT(
      (std::vector<std::string>{"--group-query-attention", "--swiglu", "--disable-bias-linear",
                                "--untie-embeddings-and-output-weights"}),
      IsSubsetOf(out.model_args));
  EXPECT_EQ(ValueOf(out.parallel_args, "--recompute-granularity"), "full");
  EXPECT_EQ(ValueOf(out.parallel_args, "--recompute-method"), "uniform");
  EXPECT_EQ(ValueOf(out.parallel_args, "--recompute-num-layers"), "1");
  EXPECT_THAT(
      (std::vector<std::string>{"--use-distributed-optimizer", "--sequence-parallel", "--bf16"}),
      IsSubsetOf(out.parallel_args));
  EXPECT_EQ(ValueOf(out.parallel_args, "--pipeline-model-parallel-size"), "4");
  EXPECT_EQ(ValueOf(out.parallel_args, "--decoder-first-pipeline-num-layers"), "");
}

// The distributed optimizer for optimizer state alone, Megatron FSDP (with the checkpoint format
// it requires) for gradients and full; hybrid groups as distributed-optimizer instances.
TEST(MegatronExportTest, ShardingLevelsAreTheDistributedOptimizerOrMegatronFsdp) {
  const Plan base = MakePlan(Llama(32), 2, 8, {16, 16});
  auto sharding_args = [](const Plan& plan) {
    const std::vector<std::string> args = ExportMegatron(plan).parallel_args;
    std::vector<std::string> out;
    for (const char* flag :
         {"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "--ckpt-format",
          "--use-distributed-optimizer", "--num-distributed-optimizer-instances"}) {
      auto it = std::find(args.begin(), args.end(), flag);
      if (it == args.end()) continue;
      out.push_back(*it);
      if (it + 1 != args.end() && it[1].rfind("--", 0) != 0) out.push_back(it[1]);
    }
    return out;
  };
  EXPECT_THAT(sharding_args(base), ElementsAre());
  EXPECT_THAT(sharding_args(Sharded(base, DpSharding::kOptimizer)),
              ElementsAre("--use-distributed-optimizer"));
  EXPECT_THAT(
      sharding_args(Sharded(base, DpSharding::kOptimizer, 2)),
      ElementsAre("--use-distributed-optimizer", "--num-distributed-optimizer-instances", "4"));
  EXPECT_THAT(sharding_args(Sharded(base, DpSharding::kGradients)),
              ElementsAre("--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads",
                          "--ckpt-format", "fsdp_dtensor", "--use-distributed-optimizer"));
  EXPECT_THAT(
      sharding_args(Sharded(base, DpSharding::kFull, 4)),
      ElementsAre("--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads_params",
                  "--ckpt-format", "fsdp_dtensor", "--use-distributed-optimizer",
                  "--num-distributed-optimizer-instances", "2"));
  const Plan full = Sharded(base, DpSharding::kFull);
  EXPECT_THAT(MegatronScript(full, ExportMegatron(full), "p.yaml"),
              ::testing::HasSubstr("leave CUDA_DEVICE_MAX_CONNECTIONS unset"));
}

// Exactly the overlap Trident's cost model assumes: none for the gradient reduction and the
// optimizer's all-gather (each after the backward or step), Megatron FSDP's reduce-scatters
// beside the compute and full sharding's prefetched all-gathers; never tp or p2p flags.
TEST(MegatronExportTest, OverlapFlagsAreThoseTheCostModelAssumes) {
  auto overlap_flags = [](const Plan& plan) {
    std::vector<std::string> out;
    for (const std::string& flag : Flags(ExportMegatron(plan).parallel_args)) {
      if (flag.find("overlap") != std::string::npos || flag.find("align") != std::string::npos)
        out.push_back(flag);
    }
    return out;
  };
  Plan base = MakePlan(Llama(32), 8, 4, {16, 16});
  base.sequence_parallel = true;
  EXPECT_THAT(overlap_flags(base), ElementsAre());
  EXPECT_THAT(overlap_flags(Sharded(base, DpSharding::kOptimizer)), ElementsAre());
  EXPECT_THAT(overlap_flags(Sharded(base, DpSharding::kGradients)),
              ElementsAre("--overlap-grad-reduce"));
  EXPECT_THAT(overlap_flags(Sharded(base, DpSharding::kFull, 2)),
              ElementsAre("--overlap-grad-reduce", "--overlap-param-gather"));
  EXPECT_THAT(
      overlap_flags(MakePlan(Gpt(8), 1, 2, {2, 2, 2, 2}, 2, ScheduleKind::kInterleaved1F1B)),
      ElementsAre());
  // The script says which overlap its prediction assumes, and how to have more.
  const Plan zero1 = Sharded(base, DpSharding::kOptimizer);
  EXPECT_THAT(MegatronScript(zero1, ExportMegatron(zero1), "p.yaml"),
              ::testing::HasSubstr("the parameter all-gather after the step (no "
                                   "--overlap-grad-reduce, --overlap-param-gather;\n# adding "
                                   "them hides more communication than Trident credits)"));
  EXPECT_THAT(MegatronScript(base, ExportMegatron(base), "p.yaml"),
              ::testing::HasSubstr("last backward\n# (no --overlap-grad-reduce; adding it hides"));
  const Plan alone = MakePlan(Llama(32), 8, 1, {32});
  EXPECT_THAT(MegatronScript(alone, ExportMegatron(alone), "p.yaml"),
              ::testing::Not(::testing::HasSubstr("overlap")));
}

TEST(MegatronExportTest, StageCutsInMegatronsThreeWays) {
  const MegatronExport ends = ExportMegatron(MakePlan(Gpt(12), 1, 1, {3, 4, 4, 1}));
  EXPECT_EQ(ValueOf(ends.parallel_args, "--decoder-first-pipeline-num-layers"), "3");
  EXPECT_EQ(ValueOf(ends.parallel_args, "--decoder-last-pipeline-num-layers"), "1");
  EXPECT_EQ(ValueOf(ends.parallel_args, "--pipeline-model-parallel-layout"), "");
  const MegatronExport irregular = ExportMegatron(MakePlan(Gpt(12), 1, 1, {2, 4, 3, 3}));
  EXPECT_EQ(ValueOf(irregular.parallel_args, "--pipeline-model-parallel-layout"),
            "Et*2|t*4|t*3|t*3L");
  EXPECT_EQ(ValueOf(irregular.parallel_args, "--decoder-first-pipeline-num-layers"), "");
  const MegatronExport even =
      ExportMegatron(MakePlan(Gpt(8), 1, 1, {2, 2, 2, 2}, 2, ScheduleKind::kInterleaved1F1B));
  EXPECT_EQ(ValueOf(even.parallel_args, "--num-virtual-stages-per-pipeline-rank"), "2");
  EXPECT_EQ(ValueOf(even.parallel_args, "--pipeline-model-parallel-layout"), "");
  const MegatronExport uneven =
      ExportMegatron(MakePlan(Gpt(8), 1, 1, {1, 3, 3, 1}, 2, ScheduleKind::kInterleaved1F1B));
  EXPECT_EQ(ValueOf(uneven.parallel_args, "--pipeline-model-parallel-layout"), "Et|t*3|t*3|tL");
  EXPECT_EQ(ValueOf(uneven.parallel_args, "--num-virtual-stages-per-pipeline-rank"), "");
}

TEST(MegatronExportTest, EveryWrittenFlagIsOneOfThePinnedVersions) {
  std::vector<std::string> known;
  for (const MegatronFlag& flag : MegatronFlags()) known.emplace_back(flag.name);
  Plan llama = MakePlan(Llama(32), 8, 2, {8, 8, 8, 8});
  llama.dp_sharding = DpSharding::kOptimizer;
  for (const Plan& plan :
       {MakePlan(Gpt(24), 2, 4, {24}), llama, Sharded(llama, DpSharding::kFull),
        Sharded(MakePlan(Gpt(24), 1, 8, {24}), DpSharding::kGradients, 4),
        MakePlan(Gpt(12), 1, 1, {3, 4, 4, 1}), MakePlan(Gpt(12), 1, 1, {2, 4, 3, 3}),
        MakePlan(Gpt(8), 1, 1, {2, 2, 2, 2}, 2, ScheduleKind::kInterleaved1F1B)}) {
    const MegatronExport out = ExportMegatron(plan);
    EXPECT_THAT(Flags(out.model_args), IsSubsetOf(known));
    EXPECT_THAT(Flags(out.parallel_args), IsSubsetOf(known));
  }
}

TEST(MegatronExportTest, ChoicesMegatronCannotExpressNameTheirField) {
  EXPECT_THAT(Inexpressible(MakePlan(Gpt(8), 1, 1, {4, 4}, 1, ScheduleKind::kGpipe)),
              ElementsAre("schedule"));
  EXPECT_THAT(Inexpressible(MakePlan(Gpt(8), 1, 1, {4, 4}, 1, ScheduleKind::kZbH1)),
              ElementsAre("schedule"));
  EXPECT_TRUE(Inexpressible(MakePlan(Gpt(8), 1, 2, {8}, 1, ScheduleKind::kGpipe)).empty())
      << "without a pipeline every synchronous schedule is the same computation";
  Plan replicas = MakePlan(Gpt(8), 1, 2, {4, 4});
  replicas.stages[1].replicas = 1;
  replicas.devices = 3;
  EXPECT_THAT(Inexpressible(replicas), ElementsAre("stages[].replicas"));
  Plan mixed = MakePlan(Gpt(8), 1, 1, {4, 4});
  mixed.stages[0].recompute = RecomputeMode::kSelective;
  EXPECT_THAT(Inexpressible(mixed), ElementsAre("stages[].recompute"));
  Plan norm_apart = MakePlan(Gpt(8), 1, 1, {4, 4});
  norm_apart.stages[0].num_layers += 5;  // the blocks and the final norm
  norm_apart.stages[1] = {10, 1, 1, RecomputeMode::kNone, 1.0, 1};
  EXPECT_THAT(Inexpressible(norm_apart), ElementsAre("stages[].first_layer"));
  ModelSpec mlp = Gpt(8);
  mlp.layers[1].kind = LayerKind::kMlpBlock;
  EXPECT_THAT(Inexpressible(MakePlan(mlp, 1, 1, {8})), ElementsAre("model.layers[].kind"));
  Plan partial_node = MakePlan(Gpt(8), 1, 12, {8});
  EXPECT_THAT(Inexpressible(partial_node), ElementsAre("devices"));
  // Sequence parallelism under cp: Megatron-LM asks 2·cp·tp to divide the sequence; Trident
  // only tp dividing seq / cp (2 · 8 · 8 = 128 does not divide 2,112 = 2 · 8 · 132).
  Plan context_sp = WithContextParallel(MakePlan(Llama(32), 8, 1, {32}), 8);
  context_sp.sequence_parallel = true;
  context_sp.seq_len = 2112;
  EXPECT_THAT(Inexpressible(context_sp), ElementsAre("mesh.cp"));
}

TEST(MegatronExportTest, ContextParallelismIsTheAllGatherKind) {
  Plan plan = WithContextParallel(MakePlan(Llama(32), 8, 1, {16, 16}), 4);
  const MegatronExport out = ExportMegatron(plan);
  ASSERT_TRUE(out.inexpressible.empty());
  EXPECT_THAT(out.parallel_args, ::testing::IsSupersetOf({"--context-parallel-size", "4",
                                                          "--cp-comm-type", "allgather"}));
}

// The whole script for a Llama plan, against tests/data/export/llama-megatron.sh (regenerate
// with TRIDENT_UPDATE_GOLDEN=1 when the format changes on purpose, and read the diff).
TEST(MegatronExportTest, ScriptMatchesTheGoldenFile) {
  Plan plan = MakePlan(Llama(32), 8, 2, {9, 8, 8, 7});
  for (PlanStage& s : plan.stages) s.recompute = RecomputeMode::kSelective;
  const MegatronExport out = ExportMegatron(plan);
  ASSERT_TRUE(out.inexpressible.empty());
  ExpectGolden(TRIDENT_SOURCE_DIR "/tests/data/export/llama-megatron.sh",
               MegatronScript(plan, out, "llama.plan.yaml"));
}

}  // namespace
}  // namespace trident
