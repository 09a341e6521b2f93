// Plan::Check's replication rules (core/plan.h): each replica needs a micro-batch; gpipe, 1f1b
// and zb_h1 take any count up to the micro-batches (round robin); pipedream and
// interleaved_1f1b need counts that divide them (interleaved: a multiple of pp per replica);
// naive needs one micro-batch per replica; mesh.dp and devices follow the replica vector.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/plan.h"
#include "tests/core/test_values.h"

namespace trident {
namespace {

// TinyPlan with `replicas` per pipeline position, `m` micro-batches of 2 and `v` virtual stages,
// the model's 5 layers cut as evenly as possible.
Plan Replicated(ScheduleKind kind, int m, const std::vector<int>& replicas, int v = 1) {
  Plan p = testing::TinyPlan();
  const int pp = static_cast<int>(replicas.size());
  p.schedule = kind;
  p.virtual_stages = v;
  p.num_micro_batches = m;
  p.global_batch = int64_t{p.micro_batch_size} * m;
  p.mesh = {*std::max_element(replicas.begin(), replicas.end()), pp, 1};
  p.devices = std::accumulate(replicas.begin(), replicas.end(), 0);
  p.devices_per_node = p.devices;
  const int stages = pp * v, layers = p.model.NumLayers();
  p.stages.clear();
  for (int s = 0, next = 0; s < stages; ++s) {
    PlanStage stage;
    stage.first_layer = next;
    stage.num_layers = layers / stages + (s < layers % stages ? 1 : 0);
    stage.replicas = replicas[s % pp];
    next += stage.num_layers;
    p.stages.push_back(stage);
  }
  return p;
}

std::string ErrorOf(const Plan& plan) {
  FieldCheck error = plan.Check();
  return error ? error->key_path + ": " + error->message + " (" + error->hint + ")" : "";
}

TEST(PlanReplicas, FlushingSchedulesTakeAnyCountUpToTheMicroBatches) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    for (int m = 1; m <= 6; ++m) {
      for (int r = 1; r <= m; ++r) {
        EXPECT_EQ(ErrorOf(Replicated(kind, m, {r, 1})), "") << "m " << m << " r " << r;
        EXPECT_EQ(ErrorOf(Replicated(kind, m, {1, r, 1})), "") << "m " << m << " r " << r;
      }
    }
  }
}

TEST(PlanReplicas, EveryReplicaNeedsAMicroBatch) {
  EXPECT_EQ(ErrorOf(Replicated(ScheduleKind::k1F1B, 4, {1, 5})),
            "stages[1].replicas: 5 replicas but a step has 4 micro-batches, and each replica "
            "needs at least one (use at most 4 replicas or raise num_micro_batches)");
  EXPECT_NE(ErrorOf(Replicated(ScheduleKind::kGpipe, 2, {3, 1})), "");
}

TEST(PlanReplicas, MeshAndDevicesFollowUnevenReplicas) {
  Plan plan = Replicated(ScheduleKind::k1F1B, 4, {3, 1});
  EXPECT_EQ(ErrorOf(plan), "");
  EXPECT_EQ(plan.devices, 4);
  EXPECT_EQ(plan.MakeRankMap().NumRanks(), 4);
  plan.mesh.dp = 2;
  EXPECT_EQ(ErrorOf(plan).rfind("mesh.dp: must equal the largest stage replication 3", 0), 0u)
      << ErrorOf(plan);
  plan = Replicated(ScheduleKind::k1F1B, 5, {2, 1, 1});
  EXPECT_EQ(ErrorOf(plan), "");
  plan.devices = 6;
  EXPECT_EQ(ErrorOf(plan).rfind("devices: the mesh uses cp · tp · Σ replicas = 4 devices", 0), 0u)
      << ErrorOf(plan);
}

// Its replicas sum every update's gradients, so they need equal counts.
TEST(PlanReplicas, PipeDreamNeedsReplicasThatDivideTheMicroBatches) {
  EXPECT_EQ(ErrorOf(Replicated(ScheduleKind::kPipeDream, 4, {2, 1})), "");
  EXPECT_EQ(ErrorOf(Replicated(ScheduleKind::kPipeDream, 4, {1, 3})),
            "stages[1].replicas: 3 replicas do not divide 4 micro-batches; pipedream needs the "
            "same count on every replica (pick num_micro_batches as a multiple of every stage's "
            "replicas, or use 1f1b, gpipe or zb_h1 (micro-batches round robin over replicas))");
}

TEST(PlanReplicas, InterleavedNeedsEqualCountsInGroupsOfPp) {
  const ScheduleKind kind = ScheduleKind::kInterleaved1F1B;
  EXPECT_EQ(ErrorOf(Replicated(kind, 4, {2, 2}, 2)), "");
  EXPECT_EQ(ErrorOf(Replicated(kind, 4, {2, 1}, 2)), "");  // 2 and 4 per replica
  EXPECT_EQ(ErrorOf(Replicated(kind, 5, {1}, 2)), "");     // pp 1: any count
  EXPECT_EQ(ErrorOf(Replicated(kind, 4, {3, 1}, 2))
                .rfind("stages[0].replicas: 3 replicas do "
                       "not divide 4 micro-batches; "
                       "interleaved_1f1b needs",
                       0),
            0u)
      << ErrorOf(Replicated(kind, 4, {3, 1}, 2));
  EXPECT_EQ(ErrorOf(Replicated(kind, 6, {2, 1}, 2)),
            "num_micro_batches: interleaved_1f1b needs the micro-batches per replica (3 at "
            "stage 0) to be a multiple of pp 2 ()");
}

TEST(PlanReplicas, NaiveRunsOneMicroBatchOnEveryReplica) {
  EXPECT_EQ(ErrorOf(Replicated(ScheduleKind::kNaive, 1, {1, 1})), "");
  EXPECT_EQ(ErrorOf(Replicated(ScheduleKind::kNaive, 2, {2, 2})), "");
  EXPECT_EQ(ErrorOf(Replicated(ScheduleKind::kNaive, 2, {2, 1})),
            "schedule: naive model parallelism runs one micro-batch per replica, so every "
            "stage needs num_micro_batches (2) replicas; stage 1 has 1 (set every stage's "
            "replicas to num_micro_batches or use gpipe / 1f1b)");
}

}  // namespace
}  // namespace trident
