// explain's neighbouring choices: which requests a plan's neighbours are, and what
// re-planning them gives.
#include "planner/neighbours.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner_fixture.h"

namespace trident {
namespace {

using ::testing::ElementsAre;

// gpt-tiny on 8 of a DGX's GPUs as tp 2 × pp 2 × dp 2, micro-batch 2, 1F1B, no recompute,
// optimizer sharding (fixed: on so small a model the search prefers none, whose one all-reduce
// pays one collective's base latency where the sharded step pays two).
struct SmallPlan {
  std::unique_ptr<PlannerFixture> fixture;
  Candidate best;
};

SmallPlan PlanSmall() {
  SmallPlan out;
  out.fixture = LoadPlannerFixture("gpt-tiny", "dgx-a100-80gb", 64, DType::kBf16);
  SearchRequest request = out.fixture->Request(8, 16);
  SearchConstraints& c = request.constraints;
  c.tp = 2;
  c.pp = 2;
  c.micro_batch = 2;
  c.schedules = {ScheduleKind::k1F1B};
  c.recompute = {RecomputeMode::kNone};
  c.dp_sharding = {DpSharding::kOptimizer};
  StatusOr<SearchResult> result = SearchPlans(*out.fixture->costs, request);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (result.ok()) out.best = result->ranked.front();
  return out;
}

std::vector<std::string> Changes(const std::vector<Neighbour>& neighbours) {
  std::vector<std::string> out;
  for (const Neighbour& n : neighbours) out.push_back(n.change);
  return out;
}

TEST(Neighbours, FixedChoicesRequestFixesThePlansChoices) {
  SmallPlan small = PlanSmall();
  const Plan& plan = small.best.plan;
  SearchRequest r = FixedChoicesRequest(plan);
  EXPECT_EQ(r.model, plan.model);
  EXPECT_EQ(r.cluster_name, "dgx-a100-80gb");
  EXPECT_EQ(r.devices, 8);
  EXPECT_EQ(r.global_batch, 16);
  EXPECT_EQ(r.seq_len, 64);
  EXPECT_EQ(r.dtype, DType::kBf16);
  EXPECT_EQ(r.runners_up, 0);
  EXPECT_EQ(r.constraints.tp, 2);
  EXPECT_EQ(r.constraints.cp, 1);
  EXPECT_EQ(r.constraints.pp, 2);
  EXPECT_FALSE(r.constraints.dp.has_value());  // follows from tp and pp
  EXPECT_EQ(r.constraints.micro_batch, 2);
  EXPECT_THAT(r.constraints.schedules, ElementsAre(ScheduleKind::k1F1B));
  EXPECT_THAT(r.constraints.recompute, ElementsAre(RecomputeMode::kNone));
  EXPECT_THAT(r.constraints.dp_sharding, ElementsAre(plan.dp_sharding));
  EXPECT_FALSE(r.constraints.dp_shard.has_value());  // no hybrid groups
  EXPECT_EQ(r.constraints.max_virtual_stages, 2);
}

TEST(Neighbours, ChangeOneChoiceEach) {
  SmallPlan small = PlanSmall();
  ASSERT_EQ(small.best.plan.dp_sharding, DpSharding::kOptimizer);
  std::vector<Neighbour> neighbours = NeighbourRequests(small.best.plan);
  EXPECT_THAT(
      Changes(neighbours),
      ElementsAre("(same choices)", "tp 4", "cp 2", "pp 4", "micro-batch 4", "tp 1", "pp 1",
                  "micro-batch 1", "schedule naive", "schedule gpipe", "schedule interleaved_1f1b",
                  "schedule zb_h1", "schedule pipedream", "recompute selective", "recompute full",
                  "dp_sharding none", "dp_sharding gradients", "dp_sharding full",
                  small.best.plan.sequence_parallel ? "without sequence parallelism"
                                                    : "with sequence parallelism"));
  const SearchRequest fixed = FixedChoicesRequest(small.best.plan);
  EXPECT_EQ(neighbours[0].request.constraints.tp, fixed.constraints.tp);
  EXPECT_EQ(neighbours[1].request.constraints.tp, 4);
  EXPECT_EQ(neighbours[1].request.constraints.pp, 2);  // the others stay fixed
  EXPECT_EQ(neighbours[1].request.constraints.cp, 1);
  EXPECT_EQ(neighbours[2].request.constraints.cp, 2);
  EXPECT_EQ(neighbours[2].request.constraints.tp, fixed.constraints.tp);
  EXPECT_EQ(neighbours[6].request.constraints.pp, 1);
  EXPECT_EQ(neighbours[7].request.constraints.micro_batch, 1);
  EXPECT_THAT(neighbours[11].request.constraints.schedules, ElementsAre(ScheduleKind::kZbH1));
  EXPECT_THAT(neighbours[14].request.constraints.recompute, ElementsAre(RecomputeMode::kFull));
  EXPECT_THAT(neighbours[15].request.constraints.dp_sharding, ElementsAre(DpSharding::kNone));
  EXPECT_THAT(neighbours[17].request.constraints.dp_sharding, ElementsAre(DpSharding::kFull));
  // A mesh change may leave dp 1: none stays allowed beside the plan's level.
  EXPECT_THAT(neighbours[1].request.constraints.dp_sharding,
              ElementsAre(DpSharding::kOptimizer, DpSharding::kNone));
  EXPECT_EQ(fixed.constraints.sequence_parallel, small.best.plan.sequence_parallel);
  EXPECT_EQ(neighbours[18].request.constraints.sequence_parallel,
            !small.best.plan.sequence_parallel);
}

TEST(Neighbours, HalvingStopsAtOneAndShardingNeedsReplicas) {
  SmallPlan small = PlanSmall();
  Plan plan = small.best.plan;
  plan.mesh = {1, 2, 1};
  plan.micro_batch_size = 1;
  plan.dp_sharding = DpSharding::kOptimizer;
  std::vector<std::string> changes = Changes(NeighbourRequests(plan));
  EXPECT_THAT(std::vector<std::string>(changes.begin(), changes.begin() + 5),
              ElementsAre("(same choices)", "tp 2", "cp 2", "pp 4", "micro-batch 2"));
  EXPECT_EQ(changes.back(), "recompute full");  // dp 1: no sharding rows
  plan.mesh.dp = 2;
  EXPECT_EQ(Changes(NeighbourRequests(plan)).back(), "dp_sharding full");
  plan.mesh.tp = 2;  // tp 2: the sequence parallelism row follows
  EXPECT_EQ(Changes(NeighbourRequests(plan)).back(), "with sequence parallelism");
}

TEST(Neighbours, ReplanningComparesWithThePlansStepTime) {
  SmallPlan small = PlanSmall();
  const double plan_ms = small.best.evaluation.step_ms;
  std::vector<NeighbourOutcome> outcomes =
      ExploreNeighbours(*small.fixture->costs, small.best.plan, plan_ms);
  ASSERT_EQ(outcomes.size(), 19u);
  // The same choices re-planned find the plan itself.
  ASSERT_TRUE(outcomes[0].status.ok()) << outcomes[0].status.ToString();
  EXPECT_DOUBLE_EQ(outcomes[0].step_ms, plan_ms);
  EXPECT_DOUBLE_EQ(outcomes[0].step_change_pct, 0);
  EXPECT_EQ(outcomes[0].peak_memory_bytes, small.best.evaluation.peak_memory_bytes);
  // tp 4 × pp 2 on 8 devices is dp 1, which 8 micro-batches of 2 allow.
  ASSERT_TRUE(outcomes[1].status.ok()) << outcomes[1].status.ToString();
  EXPECT_NEAR(outcomes[1].step_change_pct, 100 * (outcomes[1].step_ms / plan_ms - 1), 1e-9);
  // Naive runs one micro-batch, but the global batch needs 8 of size 2.
  EXPECT_EQ(outcomes[8].change, "schedule naive");
  EXPECT_EQ(outcomes[8].status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trident
