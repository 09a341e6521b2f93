// Every schedule under NCCL's ordering (runtime/comm/stream_comm.h: transfers matched by order,
// queued until launched, one stream per communicator) with the cuda backend's pipeline links
// (runtime/train/pipeline_links.h): the same losses as the MPI-like in-process world, bit for
// bit. A layout that deadlocked on NCCL's streams would time out here; one that matched a
// transfer with the wrong peer message would change the losses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/train/plan_contract.h"
#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

struct OrderCase {
  std::string name;
  PlanShape shape;
  int blocks = 2;
  bool tied = true;
};

PlanShape Shape(ScheduleKind kind, std::vector<int> replicas, int v = 1, int tp = 1, int m = 4) {
  PlanShape s;
  s.schedule = kind;
  s.replicas = std::move(replicas);
  s.virtual_stages = v;
  s.tp = tp;
  s.num_micro_batches = m;
  return s;
}

std::vector<OrderCase> Cases() {
  using K = ScheduleKind;
  return {
      {"OneFOneBOverFourStages", Shape(K::k1F1B, {1, 1, 1, 1})},
      {"OneFOneBReplicas31", Shape(K::k1F1B, {3, 1})},
      {"OneFOneBReplicas211RoundRobin", Shape(K::k1F1B, {2, 1, 1}, 1, 1, 5)},
      {"GPipeReplicas21", Shape(K::kGpipe, {2, 1})},
      {"ZeroBubbleOverThreeStages", Shape(K::kZbH1, {1, 1, 1})},
      {"ZeroBubbleTp2", Shape(K::kZbH1, {1, 1}, 1, 2)},
      {"InterleavedPp2V2", Shape(K::kInterleaved1F1B, {1, 1}, 2)},
      {"InterleavedPp2V2Dp2", Shape(K::kInterleaved1F1B, {2, 2}, 2)},
      {"InterleavedPp4V2", Shape(K::kInterleaved1F1B, {1, 1, 1, 1}, 2, 1, 8), 5},
      {"InterleavedPp3V2Tp2", Shape(K::kInterleaved1F1B, {1, 1, 1}, 2, 2, 6), 3},
      {"PipeDreamReplicas21", Shape(K::kPipeDream, {2, 1}), 2, false},
      {"PipeDreamOverThreeStages", Shape(K::kPipeDream, {1, 1, 1}), 2, false},
  };
}

class NcclOrderTest : public ::testing::TestWithParam<OrderCase> {};

TEST_P(NcclOrderTest, SameLossesAsMatchingByTag) {
  const OrderCase& c = GetParam();
  const Plan plan = MakePlan(TinyGpt(c.blocks, c.tied), c.shape);
  TrainOptions options = QuietOptions(3);
  TrainRun by_tag = TrainInProcess(plan, options);
  ASSERT_TRUE(by_tag.status.ok()) << by_tag.status.ToString();
  options.backend = BackendForDevice("cuda");
  TrainRun by_order = TrainInProcess(plan, options, /*nccl_order=*/true);
  ASSERT_TRUE(by_order.status.ok()) << by_order.status.ToString();
  EXPECT_EQ(by_order.Losses(), by_tag.Losses());
  EXPECT_EQ(by_order.Losses().size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Schedules, NcclOrderTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<OrderCase>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace trident
