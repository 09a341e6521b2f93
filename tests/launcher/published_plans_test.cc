// published_runs files as plans (launcher/published_plans.h): the shipped Table 5 file imports
// to the published meshes, and a run whose arguments do not import is named with its line.
#include "launcher/published_plans.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace trident {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Want {
  int devices;
  Mesh mesh;
  int virtual_stages;
  int num_micro_batches;
};

TEST(PublishedPlansTest, Table5ImportsToThePublishedMeshes) {
  StatusOr<PublishedPlans> in =
      LoadPublishedPlans(TRIDENT_SOURCE_DIR "/configs/published/korthikanti-2022-table5.yaml");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_EQ(in->plans.size(), 8u);
  const Want want[] = {{8, {1, 1, 8, 1}, 1, 1},
                       {64, {1, 8, 8, 1}, 3, 64},
                       {280, {1, 35, 8, 1}, 3, 280},
                       {512, {1, 64, 8, 1}, 1, 512}};
  for (size_t i = 0; i < in->plans.size(); ++i) {
    const Plan& plan = in->plans[i];
    const Want& w = want[i / 2];
    SCOPED_TRACE(in->file.runs[i].name);
    EXPECT_EQ(plan.devices, w.devices);
    EXPECT_EQ(plan.mesh, w.mesh);
    EXPECT_EQ(plan.virtual_stages, w.virtual_stages);
    EXPECT_EQ(plan.num_micro_batches, w.num_micro_batches);
    EXPECT_EQ(plan.seq_len, 2048);
    EXPECT_EQ(plan.model.vocab_size, 51200);
    EXPECT_EQ(plan.cluster, "dgx-a100-80gb");
    EXPECT_EQ(plan.sequence_parallel, i % 2 == 1);
    EXPECT_EQ(plan.stages[0].recompute,
              i % 2 == 0 ? RecomputeMode::kFull : RecomputeMode::kSelective);
  }
}

TEST(PublishedPlansTest, ARunThatDoesNotImportIsNamedWithItsLine) {
  const char text[] = R"(format_version: 1
kind: published_runs
name: one-run
source: a paper
cluster: dgx-a100-80gb
runs:
  - name: no layers
    step_s: 1.0
    megatron: --nnodes 1 --nproc-per-node 8 --hidden-size 512 --vocab-size 1000
)";
  StatusOr<PublishedPlans> in = ParsePublishedPlans(text, "p.yaml");
  ASSERT_FALSE(in.ok());
  EXPECT_THAT(in.status().message(),
              StartsWith("p.yaml:9:15: runs[0].megatron: run 'no layers': --num-layers: is "
                         "required"));
  EXPECT_THAT(in.status().message(), HasSubstr("hint: correct the run's Megatron-LM arguments"));
}

}  // namespace
}  // namespace trident
