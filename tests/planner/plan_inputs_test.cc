// The checks of a plan's inputs, the provenance digests and the figures behind "% of peak".
#include "planner/plan_inputs.h"

#include <gtest/gtest.h>

#include "planner_fixture.h"

namespace trident {
namespace {

TEST(PlanInputs, ProfileMustProfileTheModelAtTheSequenceLengthAndDtype) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  EXPECT_TRUE(CheckProfileMatches(f->profile, "p.yaml", f->model, 64, DType::kFp32).ok());

  ModelSpec other = *LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/gpt2-small.yaml");
  EXPECT_EQ(CheckProfileMatches(f->profile, "p.yaml", other, 64, DType::kFp32).message(),
            "p.yaml: profiles gpt-tiny (5 layers), not gpt2-small; use a profile of this model, "
            "or leave out --profile to plan analytically");
  Profile fewer = f->profile;
  fewer.num_layers = 4;
  EXPECT_EQ(CheckProfileMatches(fewer, "p.yaml", f->model, 64, DType::kFp32).message(),
            "p.yaml: profiles gpt-tiny (4 layers), not gpt-tiny; use a profile of this model, "
            "or leave out --profile to plan analytically");
  Status seq = CheckProfileMatches(f->profile, "p.yaml", f->model, 32, DType::kFp32);
  EXPECT_EQ(seq.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seq.message(),
            "p.yaml: profiled at seq_len 64 but the plan uses 32; use a profile taken at "
            "--seq 32, or leave out --profile");
  EXPECT_EQ(CheckProfileMatches(f->profile, "p.yaml", f->model, 64, DType::kBf16).message(),
            "p.yaml: profiled in fp32 but the plan trains in bf16; plan with --dtype fp32, or "
            "leave out --profile");
}

TEST(PlanInputs, SequenceLengthAtMostTheModels) {
  ModelSpec model = *LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/gpt-tiny.yaml");
  EXPECT_TRUE(CheckSequenceLength(model, 64).ok());
  EXPECT_EQ(CheckSequenceLength(model, 65).message(), "--seq 65 exceeds gpt-tiny's max_seq_len 64");
}

TEST(PlanInputs, MaxMemoryBetweenOneMebibyteAndOnePebibyte) {
  EXPECT_TRUE(CheckMaxMemory(0).ok());
  EXPECT_TRUE(CheckMaxMemory(1.0 / 1024).ok());
  EXPECT_TRUE(CheckMaxMemory(1048576).ok());
  EXPECT_EQ(CheckMaxMemory(0.0005).message(),
            "--max-memory 0.000500000000 GiB: give between 1 MiB (0.001) and 1 PiB (1048576) "
            "per device");
  EXPECT_EQ(CheckMaxMemory(1048577).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MaxMemoryBytes(0), 0);
  EXPECT_EQ(MaxMemoryBytes(1.5), int64_t{3} << 29);
}

TEST(PlanInputs, ProvenanceDigestsTheCostsNotTheDate) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  Plan plan;
  RecordProvenance(f->profile, f->cluster, &plan);
  EXPECT_FALSE(plan.provenance.profile_digest.empty());
  EXPECT_FALSE(plan.provenance.cluster_digest.empty());
  EXPECT_NE(plan.provenance.profile_digest, plan.provenance.cluster_digest);

  Profile retaken = f->profile;
  retaken.date = "2031-01-01T00:00:00Z";
  retaken.build = "trident 9.9 Debug";
  Plan same;
  RecordProvenance(retaken, f->cluster, &same);
  EXPECT_EQ(same.provenance, plan.provenance);

  Profile slower = f->profile;
  slower.layers[1].entries[0].fwd_ms *= 2;
  ClusterSpec bigger = f->cluster;
  bigger.nodes = 2;
  Plan changed;
  RecordProvenance(slower, bigger, &changed);
  EXPECT_NE(changed.provenance.profile_digest, plan.provenance.profile_digest);
  EXPECT_NE(changed.provenance.cluster_digest, plan.provenance.cluster_digest);
}

// GPT-3 1.3B (h 2048, 24 blocks, vocabulary 50257) at seq 2048: forward FLOPs per token are
// 24 · 24h² (the blocks' GEMMs) + 24 · 4·s·h (attention scores and values) + 2hV (the head)
// = 3.025e9; a training step is three forwards' worth per token.
TEST(PlanInputs, ReportContextCountsTrainingFlopsAndThePeak) {
  Plan plan;
  plan.model = *LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  plan.micro_batch_size = 2;
  plan.num_micro_batches = 4;
  plan.seq_len = 2048;
  plan.dtype = DType::kBf16;
  ClusterSpec a100 = *LoadClusterSpec(TRIDENT_SOURCE_DIR "/configs/clusters/dgx-a100-80gb.yaml");
  ReportContext context = MakeReportContext(plan, a100);
  const double h = 2048, s = 2048, v = 50257, tokens = 2 * 4 * s;
  const double forward_per_token = 24 * 24 * h * h + 24 * 4 * s * h + 2 * h * v;
  EXPECT_NEAR(context.model_flops_per_step / (3 * forward_per_token * tokens), 1, 0.02);
  EXPECT_DOUBLE_EQ(context.peak_flops_per_device, 312e12);

  Plan more = plan;
  more.num_micro_batches = 8;
  EXPECT_DOUBLE_EQ(MakeReportContext(more, a100).model_flops_per_step,
                   2 * context.model_flops_per_step);

  ClusterSpec cpu = *LoadClusterSpec(TRIDENT_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  EXPECT_EQ(MakeReportContext(plan, cpu).peak_flops_per_device, 0);  // no bf16 peak given
}

}  // namespace
}  // namespace trident
