// trident import megatron (launcher/megatron_import.h): shell words, the pipeline layout
// grammar, export-then-import round trips for every way the export cuts stages, flags that
// are not part of a plan listed, and bad configurations refused naming the flag.
#include "launcher/megatron_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "launcher/megatron_export.h"
#include "tests/launcher/export_plans.h"

namespace trident {
namespace {

using ::testing::AllOf;
using testing::AsImported;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Field;
using testing::Gpt;
using ::testing::HasSubstr;
using testing::Llama;
using testing::MakePlan;
using testing::Sharded;
using testing::StageFirstLayers;
using testing::StageLayerCounts;
using ::testing::StartsWith;
using testing::WithContextParallel;

TEST(ShellWordsTest, SplitsAsAShellWould) {
  EXPECT_THAT(ShellWords("A=(\n  --x 1  # a comment\n  --y 'two words' \\\n  --z \"q\\\"\"\n)"),
              ElementsAre("A=", "--x", "1", "--y", "two words", "--z", "q\""));
  EXPECT_THAT(ShellWords("torchrun a.py \"$@\"; echo"),
              ElementsAre("torchrun", "a.py", "$@", "echo"));
}

TEST(ShellWordsTest, NumbersTheCommands) {
  std::vector<int> commands;
  EXPECT_THAT(
      ShellWords("set -e\nA=(\n  --x 1\n)\nh=$(head -n 1); torchrun a.py", &commands),
      ElementsAre("set", "-e", "A=", "--x", "1", "h=$", "head", "-n", "1", "torchrun", "a.py"));
  EXPECT_THAT(commands, ElementsAre(0, 0, 1, 2, 2, 4, 5, 5, 5, 7, 7));
}

TEST(ShellWordsTest, SubstitutesPlainVariables) {
  EXPECT_THAT(SubstituteVariables(ShellWords("N=8\nX=$N ${N}x $NODE \"$N\" ${ARGS[@]}")),
              ElementsAre("N=8", "X=8", "8x", "$NODE", "8", "${ARGS[@]}"));
}

TEST(PipelineLayoutTest, ExpandsRepeatsAndGroups) {
  EXPECT_THAT(*ExpandPipelineLayout("Et*3|(tt|)*2,L"), ElementsAre("Ettt", "tt", "tt", "L"));
  EXPECT_THAT(*ExpandPipelineLayout("E||t|L"), ElementsAre("E", "", "t", "L"));
  EXPECT_THAT(ExpandPipelineLayout("Et*3|(tt|)*29,m|L").status().message(),
              HasSubstr("'m' is not one of E (embedding), t (transformer layer), L (loss)"));
  EXPECT_THAT(ExpandPipelineLayout("E(t|L").status().message(), HasSubstr("unbalanced '('"));
}

// Export, then import: the same plan, but for what Megatron-LM does not hold (predictions,
// provenance, a node larger than the job) and what the import is told (name, cluster,
// vocabulary).
void ExpectRoundTrip(const Plan& plan) {
  const MegatronExport out = ExportMegatron(plan);
  ASSERT_TRUE(out.inexpressible.empty()) << FormatFieldError(out.inexpressible.front());
  MegatronImportOptions options{plan.model.name, plan.cluster, plan.model.vocab_size};
  StatusOr<MegatronImport> back =
      ImportMegatron(MegatronScript(plan, out, "p.yaml"), "run.sh", options);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const Plan want = AsImported(plan);
  EXPECT_EQ(back->plan.ToString(), want.ToString());
  EXPECT_EQ(PlanToYaml(back->plan), PlanToYaml(want));
  // The export writes the overlap Trident assumes, so nothing differs from the prediction.
  EXPECT_THAT(back->notes, ElementsAre());
}

TEST(MegatronImportTest, ExportedPlansComeBackTheSame) {
  ExpectRoundTrip(MakePlan(Gpt(24), 2, 4, {24}));
  Plan llama = MakePlan(Llama(32), 8, 2, {9, 8, 8, 7});
  llama.dp_sharding = DpSharding::kOptimizer;
  llama.sequence_parallel = true;
  for (PlanStage& s : llama.stages) s.recompute = RecomputeMode::kFull;
  ExpectRoundTrip(llama);
  ExpectRoundTrip(MakePlan(Gpt(12), 1, 1, {2, 4, 3, 3}));
  ExpectRoundTrip(MakePlan(Gpt(8), 1, 1, {2, 2, 2, 2}, 2, ScheduleKind::kInterleaved1F1B));
  Plan uneven = MakePlan(Gpt(8), 1, 1, {1, 3, 3, 1}, 2, ScheduleKind::kInterleaved1F1B);
  for (PlanStage& s : uneven.stages) s.recompute = RecomputeMode::kSelective;
  ExpectRoundTrip(uneven);
  ExpectRoundTrip(WithContextParallel(MakePlan(Llama(32), 8, 2, {16, 16}), 4));
  Plan context_sp = WithContextParallel(MakePlan(Llama(32), 2, 1, {32}), 2);
  context_sp.sequence_parallel = true;
  ExpectRoundTrip(context_sp);
}

// Each sharding level, whole and hybrid (--num-distributed-optimizer-instances), with tp,
// pp and cp.
TEST(MegatronImportTest, EveryShardingLevelComesBackTheSame) {
  for (DpSharding level : {DpSharding::kOptimizer, DpSharding::kGradients, DpSharding::kFull}) {
    ExpectRoundTrip(Sharded(MakePlan(Llama(32), 1, 8, {32}), level));
    ExpectRoundTrip(Sharded(MakePlan(Llama(32), 2, 8, {16, 16}), level, 4));
    ExpectRoundTrip(Sharded(WithContextParallel(MakePlan(Llama(32), 2, 4, {32}), 2), level, 2));
  }
}

// PyTorch's FSDP2 under Megatron-LM (pp 1): full sharding, or gradients without resharding
// after the forward.
TEST(MegatronImportTest, ReadsTorchFsdp2AsFullOrGradientSharding) {
  const std::string args =
      "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 2048 "
      "--num-attention-heads 16 --seq-length 2048 --tensor-model-parallel-size 2 "
      "--micro-batch-size 1 --vocab-size 50257 --use-torch-fsdp2";
  StatusOr<MegatronImport> full = ImportMegatron(args, "args.txt", {});
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->plan.mesh, (Mesh{8, 1, 2}));
  EXPECT_EQ(full->plan.dp_sharding, DpSharding::kFull);
  StatusOr<MegatronImport> zero2 =
      ImportMegatron(args + " --torch-fsdp2-no-reshard-after-forward", "args.txt", {});
  ASSERT_TRUE(zero2.ok()) << zero2.status().ToString();
  EXPECT_EQ(zero2->plan.dp_sharding, DpSharding::kGradients);
}

MegatronImportOptions WithVocab() {
  MegatronImportOptions options;
  options.vocab_size = 50257;
  return options;
}

// A hand-written script of tests/data/export, imported with its model's vocabulary (Llama 3's
// tokenizer), named by its file.
StatusOr<MegatronImport> ImportHandScript(const std::string& file) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text,
                           ReadFile(std::string(TRIDENT_SOURCE_DIR "/tests/data/export/") + file));
  MegatronImportOptions options = WithVocab();
  options.vocab_size = 128256;
  return ImportMegatron(text, file, options);
}

const char kArgs[] =
    "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 2048 "
    "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --micro-batch-size 2 "
    "--global-batch-size 64 --bf16 --lr 3e-4 --data-path /data/x --use-flash-attn";

TEST(MegatronImportTest, ReadsMegatronsDefaultsAndListsTheRest) {
  StatusOr<MegatronImport> in = ImportMegatron(kArgs, "args.txt", WithVocab());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const Plan& p = in->plan;
  EXPECT_EQ(p.devices, 16);
  EXPECT_EQ(p.mesh, (Mesh{4, 2, 2}));
  EXPECT_EQ(p.num_micro_batches, 32);
  EXPECT_EQ(p.model.ffn_hidden, 8192);  // 4 h
  EXPECT_EQ(p.model.dropout, 0.1);      // Megatron-LM's default
  EXPECT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(p.stages[0].num_layers, 5);                 // the embedding and 4 blocks
  EXPECT_EQ(p.model.attention, AttentionKind::kFlash);  // --use-flash-attn
  EXPECT_THAT(in->ignored, ElementsAre("--lr", "--data-path"));
}

// Without --attention-backend, Megatron-LM's auto picks a fused kernel; unfused and local keep
// the scores; a contradiction or an unknown backend is named.
TEST(MegatronImportTest, TheAttentionBackendSaysFlashOrUnfused) {
  auto attention = [](const std::string& extra) -> StatusOr<AttentionKind> {
    TRIDENT_ASSIGN_OR_RETURN(MegatronImport in,
                             ImportMegatron(std::string(kArgs) + " " + extra, "a.sh", WithVocab()));
    return in.plan.model.attention;
  };
  EXPECT_EQ(*attention(""), AttentionKind::kFlash);
  EXPECT_EQ(*attention("--attention-backend fused"), AttentionKind::kFlash);
  EXPECT_EQ(*attention("--attention-backend auto"), AttentionKind::kFlash);
  const std::string no_flag = std::string(kArgs).substr(0, std::string(kArgs).rfind(" --use"));
  StatusOr<MegatronImport> unfused =
      ImportMegatron(no_flag + " --attention-backend unfused", "a.sh", WithVocab());
  ASSERT_TRUE(unfused.ok()) << unfused.status().ToString();
  EXPECT_EQ(unfused->plan.model.attention, AttentionKind::kUnfused);
  EXPECT_THAT(attention("--attention-backend local").status().message(),
              HasSubstr("--use-flash-attn: contradicts --attention-backend local"));
  EXPECT_THAT(attention("--attention-backend cudnn").status().message(),
              HasSubstr("--attention-backend: cudnn is not one of Megatron-LM's"));
}

// Every word of Megatron-LM's arguments that is not read is listed: a single-dash flag (with
// its value) and a stray word that is no flag's value, in an argument list, an array or after
// the training script; the shell around them and torchrun's words before the script are not.
TEST(MegatronImportTest, ListsSingleDashFlagsAndStrayWords) {
  StatusOr<MegatronImport> in =
      ImportMegatron(std::string(kArgs) + " -x 3 --bf16 stray -q", "args.txt", WithVocab());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_THAT(in->ignored, ElementsAre("--lr", "--data-path", "-x", "stray", "-q"));
  const std::string script =
      "#!/bin/bash\nset -euo pipefail\nmkdir -p $DIR\nunset CUDA_DEVICE_MAX_CONNECTIONS\n"
      "ARGS=(\n  --num-layers 8\n  -v\n  --hidden-size 2048 extra\n)\n"
      "python -m torch.distributed.run --nnodes 2 --nproc-per-node 8 pretrain_gpt.py "
      "${ARGS[@]} --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 -y 5 "
      "leftover \"$@\"";
  StatusOr<MegatronImport> scripted = ImportMegatron(script, "run.sh", WithVocab());
  ASSERT_TRUE(scripted.ok()) << scripted.status().ToString();
  EXPECT_THAT(scripted->ignored, ElementsAre("-v", "extra", "-y", "leftover"));
  // A flag's value is a word of its own command: a switch closing an array takes none.
  StatusOr<MegatronImport> closed =
      ImportMegatron("A=(\n  --my-switch\n)\nB=(\n  word --num-layers 8\n)\n" + std::string(kArgs),
                     "args.txt", WithVocab());
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_THAT(closed->ignored, ElementsAre("--my-switch", "word", "--lr", "--data-path"));
}

// --vocab-size in the file is read, and the import options override it.
TEST(MegatronImportTest, ReadsVocabSizeFromTheFileUnlessTheOptionsGiveIt) {
  const std::string args = std::string(kArgs) + " --vocab-size 51200";
  StatusOr<MegatronImport> in = ImportMegatron(args, "args.txt", {});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->plan.model.vocab_size, 51200);
  EXPECT_THAT(in->ignored, ElementsAre("--lr", "--data-path"));
  StatusOr<MegatronImport> told = ImportMegatron(args, "args.txt", WithVocab());
  ASSERT_TRUE(told.ok()) << told.status().ToString();
  EXPECT_EQ(told->plan.model.vocab_size, 50257);
}

// A script in Megatron-LM's own examples style: variables, arrays, torchrun's underscore flag.
TEST(MegatronImportTest, ReadsAHandWrittenScript) {
  StatusOr<MegatronImport> in = ImportHandScript("llama3-8b-hand.sh");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const Plan& p = in->plan;
  EXPECT_EQ(p.ToString(),
            "megatron on 64 devices: dp 8 × pp 1 × tp 8, 1f1b, micro-batch 1 × 512, seq 8192, "
            "dp_sharding optimizer");
  EXPECT_EQ(p.dp_sharding, DpSharding::kOptimizer);
  EXPECT_EQ(p.stages[0].recompute, RecomputeMode::kSelective);
  EXPECT_EQ(p.model.kv_heads, 8);
  EXPECT_EQ(p.model.LayerAt(1), LayerKind::kLlamaBlock);
  EXPECT_THAT(in->ignored, ElementsAre("--train-iters", "--lr", "--data-path", "--tokenizer-type"));
  // Its overlap hides more than Trident credits: the reduction and the all-gather.
  EXPECT_THAT(in->notes, ElementsAre(StartsWith("--overlap-grad-reduce: Megatron-LM reduces the "
                                                "gradients in buckets during the last backward"),
                                     StartsWith("--overlap-param-gather:")));
}

// Megatron-LM's Megatron-FSDP user guide style: FSDP's flags, the hybrid instances, its overlap,
// and the performance flags that are not part of a plan listed.
TEST(MegatronImportTest, ReadsAHandWrittenMegatronFsdpScript) {
  StatusOr<MegatronImport> in = ImportHandScript("llama3-70b-megatron-fsdp-hand.sh");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const Plan& p = in->plan;
  EXPECT_EQ(p.mesh, (Mesh{16, 1, 4}));
  EXPECT_EQ(p.dp_sharding, DpSharding::kFull);
  EXPECT_EQ(p.dp_shard, 8);
  EXPECT_TRUE(p.sequence_parallel);
  EXPECT_EQ(p.stages[0].recompute, RecomputeMode::kFull);
  EXPECT_THAT(in->ignored, ElementsAre("--train-iters", "--lr", "--calculate-per-token-loss",
                                       "--grad-reduce-in-bf16", "--no-gradient-accumulation-fusion",
                                       "--init-model-with-meta-device", "--fsdp-double-buffer",
                                       "--data-path", "--tokenizer-type"));
  EXPECT_THAT(in->notes, ElementsAre());  // the overlap Trident assumes for full sharding
}

// Megatron-LM's examples/llama style with every model-parallel flag a dense model has: tp with
// sequence parallelism, context parallelism, a pipeline of virtual stages whose first and last
// ranks hold their own layer counts, the distributed optimizer and full recompute.
TEST(MegatronImportTest, ReadsAHandWrittenPipelineScript) {
  StatusOr<MegatronImport> in = ImportHandScript("llama3-70b-megatron-pipeline-hand.sh");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const Plan& p = in->plan;
  EXPECT_EQ(p.devices, 64);
  EXPECT_EQ(p.devices_per_node, 8);
  EXPECT_EQ(p.mesh, (Mesh{2, 4, 4, 2}));
  EXPECT_TRUE(p.sequence_parallel);
  EXPECT_EQ(p.virtual_stages, 2);
  EXPECT_EQ(p.schedule, ScheduleKind::kInterleaved1F1B);
  EXPECT_EQ(p.micro_batch_size, 1);
  EXPECT_EQ(p.global_batch, 128);
  EXPECT_EQ(p.num_micro_batches, 128);
  EXPECT_EQ(p.seq_len, 8192);
  EXPECT_EQ(p.dp_sharding, DpSharding::kOptimizer);
  EXPECT_EQ(p.dp_shard, 0);
  EXPECT_EQ(p.dtype, DType::kBf16);
  // Ranks 0 and 3 hold 18 layers, 9 a virtual stage; ranks 1 and 2 the other 44, 11 a virtual
  // stage; model stage c · 4 + r is rank r's virtual stage c. The first stage adds the
  // embedding, the last the final norm and the output layer.
  EXPECT_THAT(StageLayerCounts(p), ElementsAre(10, 11, 11, 9, 9, 11, 11, 11));
  EXPECT_THAT(StageFirstLayers(p), ElementsAre(0, 10, 21, 32, 41, 50, 61, 72));
  EXPECT_THAT(p.stages, Each(Field(&PlanStage::recompute, RecomputeMode::kFull)));
  EXPECT_THAT(p.stages, Each(Field(&PlanStage::replicas, 2)));
  EXPECT_EQ(p.model.NumLayers(), 83);
  EXPECT_EQ(p.model.kv_heads, 8);
  EXPECT_THAT(in->ignored,
              ElementsAre("--master_addr", "--master_port", "--kv-channels", "--train-iters",
                          "--lr", "--min-lr", "--lr-decay-style", "--weight-decay", "--clip-grad",
                          "--tokenizer-type", "--tokenizer-model", "--data-path", "--split",
                          "--log-interval", "--save-interval", "--eval-interval", "--eval-iters",
                          "--save", "--load"));
  EXPECT_THAT(in->notes, ElementsAre());
}

// With virtual stages the end counts are the end ranks', split over their virtual stages.
TEST(MegatronImportTest, EndLayerCountsWithVirtualStagesAreTheEndRanks) {
  auto blocks = [](const std::string& extra) -> StatusOr<std::vector<int>> {
    TRIDENT_ASSIGN_OR_RETURN(
        MegatronImport in,
        ImportMegatron(std::string(kArgs) + " --num-layers 18 --pipeline-model-parallel-size 4 " +
                           "--tensor-model-parallel-size 1" + extra,
                       "a.sh", WithVocab()));
    return StageLayerCounts(in.plan);
  };
  // Rank 0: 2 transformer layers (1 a virtual stage), rank 3: 4 (2), ranks 1 and 2 the other
  // 12 (3); the first stage adds the embedding, the last the final norm and output layer.
  StatusOr<std::vector<int>> split = blocks(
      " --num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 2 "
      "--decoder-last-pipeline-num-layers 4");
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_THAT(*split, ElementsAre(2, 3, 3, 2, 1, 3, 3, 4));
  EXPECT_THAT(blocks(" --num-virtual-stages-per-pipeline-rank 2 "
                     "--decoder-first-pipeline-num-layers 3")
                  .status()
                  .message(),
              HasSubstr("--decoder-first-pipeline-num-layers: pipeline rank 0's 3 transformer "
                        "layers do not split evenly over its 2 virtual stages"));
  EXPECT_THAT(blocks(" --num-layers-per-virtual-pipeline-stage 2 "
                     "--decoder-first-pipeline-num-layers 2")
                  .status()
                  .message(),
              HasSubstr("Megatron-LM refuses it with --decoder-first/last-pipeline-num-layers"));
}

TEST(MegatronImportTest, TheOptionsGiveTheWorldWhenTorchrunsFlagsDoNot) {
  std::string args = kArgs;
  args.replace(args.find("--nproc-per-node 8"), 18, "--nproc-per-node gpu");
  EXPECT_THAT(ImportMegatron(args, "args.txt", WithVocab()).status().message(),
              HasSubstr("--nproc-per-node: expected a whole number, got 'gpu'"));
  MegatronImportOptions options = WithVocab();
  options.devices = 16;
  options.devices_per_node = 8;
  StatusOr<MegatronImport> in = ImportMegatron(args, "args.txt", options);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->plan.devices, 16);
  EXPECT_EQ(in->plan.devices_per_node, 8);
}

// The overlap flags are read (never listed as ignored); each one that makes Megatron-LM
// overlap more or less than Trident credits the plan with comes back as a note naming it.
TEST(MegatronImportTest, OverlapFlagsAreReadAndNoteWhatTheyChange) {
  auto import = [](const std::string& extra) {
    StatusOr<MegatronImport> in =
        ImportMegatron(std::string(kArgs) + extra, "args.txt", WithVocab());
    EXPECT_TRUE(in.ok()) << extra << ": " << in.status().ToString();
    if (!in.ok()) return std::vector<std::string>{"failed"};
    EXPECT_THAT(in->ignored, ElementsAre("--lr", "--data-path")) << extra;
    return in->notes;
  };
  EXPECT_THAT(import(""), ElementsAre());  // as Trident costs it
  EXPECT_THAT(import(" --overlap-grad-reduce"),
              ElementsAre(AllOf(StartsWith("--overlap-grad-reduce: Megatron-LM reduces the first "
                                           "pipeline stage's gradients"),
                                HasSubstr("Trident costs the reduction after the backward"))));
  EXPECT_THAT(import(" --overlap-grad-reduce --no-align-grad-reduce"),
              ElementsAre(HasSubstr("reduces every pipeline stage's gradients")));
  EXPECT_THAT(import(" --no-align-grad-reduce"), ElementsAre());  // only with overlap
  EXPECT_THAT(import(" --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"),
              ElementsAre(StartsWith("--overlap-grad-reduce:"),
                          AllOf(StartsWith("--overlap-param-gather: Megatron-LM all-gathers"),
                                HasSubstr("after the optimizer step, never hidden"))));
  const std::string fsdp =
      " --use-megatron-fsdp --ckpt-format fsdp_dtensor --use-distributed-optimizer "
      "--data-parallel-sharding-strategy ";
  EXPECT_THAT(import(fsdp + "optim_grads_params --overlap-grad-reduce --overlap-param-gather"),
              ElementsAre());
  EXPECT_THAT(import(fsdp + "optim_grads_params"),
              ElementsAre(StartsWith("no --overlap-grad-reduce: Megatron FSDP reduce-scatters"),
                          StartsWith("no --overlap-param-gather: Megatron FSDP gathers")));
  EXPECT_THAT(import(fsdp + "optim_grads --overlap-grad-reduce"), ElementsAre());
  EXPECT_THAT(import(" --sequence-parallel --tp-comm-overlap"),
              ElementsAre(AllOf(StartsWith("--tp-comm-overlap:"),
                                HasSubstr("Trident costs them on the critical path"))));
  EXPECT_THAT(import(" --no-overlap-p2p-communication"), ElementsAre());  // no interleaving
  EXPECT_THAT(import(" --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                     "--no-overlap-p2p-communication"),
              ElementsAre(HasSubstr("Trident costs the transfers as asynchronous")));
  // Without data parallelism there is no reduction to overlap.
  StatusOr<MegatronImport> alone =
      ImportMegatron(std::string(kArgs) + " --tensor-model-parallel-size 8 --overlap-grad-reduce",
                     "args.txt", WithVocab());
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->plan.mesh.dp, 1);
  EXPECT_THAT(alone->notes, ElementsAre());
}

TEST(MegatronImportTest, BadConfigurationsNameTheFlag) {
  struct Case {
    std::string extra;
    std::string message;
  };
  const std::vector<Case> cases = {
      {" --hidden-size big", "args.txt: --hidden-size: expected a whole number, got 'big'"},
      {" --tensor-model-parallel-size 3", "tp 3 × pp 2 does not divide the world size 16"},
      {" --global-batch-size 65", "is not divisible by micro batch size (2) times data parallel"},
      {" --swiglu", "give --swiglu and --disable-bias-linear together or neither"},
      {" --pipeline-model-parallel-layout 't*4|Et*4L'", "E must open the first stage"},
      {" --pipeline-model-parallel-layout 'Et*4|t*3L'", "holds 7 transformer layers"},
      {" --decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 3",
       "leaves 2 of the 8 transformer layers and no stage for them"},
      {" --num-layers 9", "9 transformer layers do not split evenly over 2 stages"},
      {" --num-virtual-stages-per-pipeline-rank 0",
       "--num-virtual-stages-per-pipeline-rank: must be 1 or more"},
      {" --recompute-granularity full --recompute-num-layers 2", "Trident recomputes none"},
      {" --micro-batch-size", "--micro-batch-size: needs a value"},
      {" --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads",
       "--ckpt-format: Megatron-LM requires fsdp_dtensor with --use-megatron-fsdp"},
      {" --use-megatron-fsdp --ckpt-format fsdp_dtensor --data-parallel-sharding-strategy zero3",
       "zero3 is not one of no_shard, optim, optim_grads, optim_grads_params"},
      {" --data-parallel-sharding-strategy optim_grads_params",
       "takes effect only with --use-megatron-fsdp"},
      {" --use-torch-fsdp2", "--use-torch-fsdp2: Megatron-LM refuses it with pipeline"},
      {" --use-torch-fsdp2 --use-distributed-optimizer",
       "--use-torch-fsdp2: contradicts --use-distributed-optimizer"},
      {" --use-distributed-optimizer --num-distributed-optimizer-instances 3",
       "--num-distributed-optimizer-instances: 3 does not divide the data-parallel size 4"},
      {" --num-distributed-optimizer-instances 2", "copies of a state nothing shards"},
      {" --use-distributed-optimizer --num-distributed-optimizer-instances 4",
       "leaves each shard group one data-parallel replica"},
      {" --use-megatron-fsdp --ckpt-format fsdp_dtensor --data-parallel-sharding-strategy "
       "optim_grads_params --num-distributed-optimizer-instances 2 --outer-dp-sharding-strategy "
       "optim",
       "--outer-dp-sharding-strategy: optim shards the optimizer state across the shard groups"},
      {" --overlap-grad-reduce --overlap-param-gather",
       "--overlap-param-gather: Megatron-LM allows it only with --use-distributed-optimizer"},
      {" --use-distributed-optimizer --overlap-param-gather",
       "--overlap-param-gather: Megatron-LM requires --overlap-grad-reduce with it"},
      {" --tp-comm-overlap", "--tp-comm-overlap: Megatron-LM requires --sequence-parallel"},
      {" --num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication",
       "asks pp above 2 for the interleaved schedule without p2p overlap"},
  };
  for (const Case& c : cases) {
    StatusOr<MegatronImport> in =
        ImportMegatron(std::string(kArgs) + c.extra, "args.txt", WithVocab());
    ASSERT_FALSE(in.ok()) << c.extra;
    EXPECT_THAT(in.status().message(), HasSubstr(c.message)) << c.extra;
  }
  StatusOr<MegatronImport> no_vocab = ImportMegatron(kArgs, "args.txt", {});
  EXPECT_THAT(no_vocab.status().message(),
              HasSubstr("give it with trident import megatron --vocab-size V"));
}

}  // namespace
}  // namespace trident
