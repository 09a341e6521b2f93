// The cluster's levels change what a plan costs: a dp group or a stage boundary that crosses
// a pod pays the pod link; one inside a pod does not see it.
#include <gtest/gtest.h>

#include "planner/evaluate.h"
#include "planner/search.h"
#include "planner_fixture.h"

namespace trident {
namespace {

constexpr LinkSpec kFastPodLink = {5, 1};         // as fast as inter_node
constexpr LinkSpec kSlowPodLink = {0.001, 1000};  // 1 MB/s, 1 ms

// gpt-tiny on 8 nodes of 4 CPU cores in pods of 2 nodes (ranks 0-7 are pod 0).
std::unique_ptr<PlannerFixture> Pods() {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  f->cluster.nodes = 8;
  f->cluster.devices_per_node = 4;
  f->cluster.levels = {{"pod", 2, kFastPodLink}};
  EXPECT_TRUE(f->cluster.Validate().ok()) << f->cluster.Validate().ToString();
  return f;
}

// The best plan for `devices` at tp 1 and the given pp, with the fast pod link.
Plan BestPlan(const PlannerFixture& f, int devices, int pp) {
  SearchRequest request = f.Request(devices, 32);
  request.constraints.tp = 1;
  request.constraints.pp = pp;
  request.constraints.dp = devices / pp;  // every device, so that the pods are crossed
  StatusOr<SearchResult> result = SearchPlans(*f.costs, request);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? result->ranked.front().plan : Plan{};
}

// The plan's evaluated step time with the pod link `pod`.
double StepMs(PlannerFixture& f, const Plan& plan, LinkSpec pod) {
  f.cluster.levels[0].link = pod;  // f.costs reads the cluster it was made with
  StatusOr<Evaluation> ev = EvaluatePlan(*f.costs, plan, {});
  EXPECT_TRUE(ev.ok()) << ev.status().ToString();
  return ev.ok() ? ev->step_ms : 0;
}

TEST(Levels, ADpGroupInsideAPodDoesNotSeeThePodLink) {
  auto f = Pods();
  Plan plan = BestPlan(*f, 8, 1);  // dp 8: ranks 0-7
  ASSERT_EQ(plan.mesh.dp, 8);
  EXPECT_EQ(StepMs(*f, plan, kSlowPodLink), StepMs(*f, plan, kFastPodLink));
}

TEST(Levels, ADpGroupAcrossPodsPaysThePodLink) {
  auto f = Pods();
  Plan plan = BestPlan(*f, 16, 1);  // dp 16: ranks 0-15, pods 0 and 1
  ASSERT_EQ(plan.mesh.dp, 16);
  const double fast_ms = StepMs(*f, plan, kFastPodLink);
  // At least the all-reduce's 2·15 latencies of 1 ms each on the slow link.
  EXPECT_GT(StepMs(*f, plan, kSlowPodLink), fast_ms + 30);
}

TEST(Levels, AStageBoundaryAcrossPodsPaysThePodLink) {
  auto f = Pods();
  Plan inside = BestPlan(*f, 8, 2);  // positions on ranks 0-3 and 4-7: one pod
  ASSERT_EQ(inside.mesh.dp, 4);
  EXPECT_EQ(StepMs(*f, inside, kSlowPodLink), StepMs(*f, inside, kFastPodLink));
  Plan across = BestPlan(*f, 16, 2);  // positions on ranks 0-7 and 8-15: two pods
  ASSERT_EQ(across.mesh.dp, 8);
  across.model.tied_embeddings = false;  // leaves the boundary as the only pod crossing
  // Each micro-batch's activation and gradient cross at least once: 1 ms of latency each.
  EXPECT_GT(StepMs(*f, across, kSlowPodLink), StepMs(*f, across, kFastPodLink) + 2);
}

}  // namespace
}  // namespace trident
