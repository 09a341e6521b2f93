// The fields a plan shares with its search request travel both ways unchanged.
#include "planner/plan_request.h"

#include <gtest/gtest.h>

#include "planner_fixture.h"

namespace trident {
namespace {

TEST(PlanRequest, JobRoundTripsThroughAPlan) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 32, DType::kFp32);
  SearchRequest request = f->Request(2, 12);
  Plan plan;
  plan.mesh = {2, 1, 1};
  CopyJobToPlan(request, &plan);
  EXPECT_EQ(plan.model, f->model);
  EXPECT_EQ(plan.cluster, "local-cpu");
  EXPECT_EQ(plan.devices, 2);
  EXPECT_EQ(plan.global_batch, 12);
  EXPECT_EQ(plan.seq_len, 32);
  EXPECT_EQ(plan.dtype, DType::kFp32);
  EXPECT_EQ(plan.mesh, (Mesh{2, 1, 1}));  // the plan's choices are left alone

  SearchRequest back = RequestForJob(plan);
  EXPECT_EQ(back.model, request.model);
  EXPECT_EQ(back.cluster_name, request.cluster_name);
  EXPECT_EQ(back.devices, request.devices);
  EXPECT_EQ(back.global_batch, request.global_batch);
  EXPECT_EQ(back.seq_len, request.seq_len);
  EXPECT_EQ(back.dtype, request.dtype);
  EXPECT_FALSE(back.constraints.tp.has_value());  // choices stay open
  EXPECT_EQ(back.runners_up, SearchRequest().runners_up);
}

TEST(PlanRequest, SearchedPlansCarryTheirJob) {
  auto f = LoadPlannerFixture("gpt-tiny", "local-cpu", 64, DType::kFp32);
  SearchRequest request = f->Request(2, 8);
  StatusOr<SearchResult> result = SearchPlans(*f->costs, request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const Candidate& c : result->ranked) {
    SearchRequest job = RequestForJob(c.plan);
    EXPECT_EQ(job.model, request.model);
    EXPECT_EQ(job.cluster_name, request.cluster_name);
    EXPECT_EQ(job.devices, request.devices);
    EXPECT_EQ(job.global_batch, request.global_batch);
    EXPECT_EQ(job.seq_len, request.seq_len);
    EXPECT_EQ(job.dtype, request.dtype);
  }
}

}  // namespace
}  // namespace trident
