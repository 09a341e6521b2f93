// JobLayout: for every schedule (PipeDream with its per-update replica barrier), pp 1, 2 and 4,
// uniform replication 1 and 2 and the non-uniform {2, 1}, and for GPipe, 1F1B and ZB-H1 also
// replicas that do not divide the micro-batches (round robin: {3, 1}, {1, 3}, {2, 1, 1} over 4
// and 5), tp 1 and 2, one and two steps: the layout is built, cannot deadlock, and the ranks'
// lists hold every (kind, stage, global micro-batch) exactly once, on the rank RankOf names;
// tp ranks run their tp-0 rank's list; and which layouts post every pair's transfers in one
// order on both sides (what NCCL needs).
#include "runtime/train/job_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

struct LayoutCase {
  std::string name;
  PlanShape shape;
  int blocks = 2;
  int steps = 1;
};
void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

std::string ReplicasName(const std::vector<int>& replicas) {
  std::string name = "r";
  for (int r : replicas) name += std::to_string(r);
  return name;
}

LayoutCase MakeCase(ScheduleKind kind, const std::vector<int>& replicas, int m, int tp, int steps) {
  const int pp = static_cast<int>(replicas.size());
  LayoutCase c;
  c.shape.schedule = kind;
  c.shape.tp = tp;
  c.shape.replicas = replicas;
  c.shape.virtual_stages = kind == ScheduleKind::kInterleaved1F1B ? 2 : 1;
  c.shape.num_micro_batches = m;
  // Enough layers for pp · v stages (5 layers hold up to 5 stages).
  c.blocks = std::max(2, pp * c.shape.virtual_stages - 3);
  c.steps = steps;
  c.name = NameOf(ScheduleKindNames(), kind) + "_pp" + std::to_string(pp) + "_" +
           ReplicasName(replicas) + "_m" + std::to_string(m) + "_tp" + std::to_string(tp) +
           "_steps" + std::to_string(steps);
  return c;
}

// Replicas that do not divide the micro-batches, under the schedules that take them.
void AddRoundRobinCases(std::vector<LayoutCase>* cases) {
  const std::vector<std::vector<int>> replications = {{3, 1}, {1, 3}, {2, 1, 1}, {3, 2}};
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    for (const std::vector<int>& replicas : replications) {
      for (int m : {4, 5}) {
        for (int tp : {1, 2}) {
          for (int steps : {1, 2}) cases->push_back(MakeCase(kind, replicas, m, tp, steps));
        }
      }
    }
  }
}

std::vector<LayoutCase> AllLayoutCases() {
  const std::vector<std::vector<int>> replications = {{1},    {2},          {1, 1},      {2, 2},
                                                      {2, 1}, {1, 1, 1, 1}, {2, 2, 2, 2}};
  std::vector<LayoutCase> cases;
  for (ScheduleKind kind :
       {ScheduleKind::kNaive, ScheduleKind::kGpipe, ScheduleKind::k1F1B,
        ScheduleKind::kInterleaved1F1B, ScheduleKind::kZbH1, ScheduleKind::kPipeDream}) {
    for (const std::vector<int>& replicas : replications) {
      const int dp = replicas.front();
      const bool uniform =
          std::all_of(replicas.begin(), replicas.end(), [dp](int r) { return r == dp; });
      if (kind == ScheduleKind::kNaive && !uniform) continue;  // see NaiveNeedsOneMicroBatch...
      const int m = kind == ScheduleKind::kNaive ? dp : 4 * dp;
      for (int tp : {1, 2}) {
        for (int steps : {1, 2}) cases.push_back(MakeCase(kind, replicas, m, tp, steps));
      }
    }
  }
  AddRoundRobinCases(&cases);
  return cases;
}

class JobLayoutCoverageTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(JobLayoutCoverageTest, EveryActionOnceOnTheRankRankOfNames) {
  const LayoutCase& c = GetParam();
  Plan plan = MakePlan(TinyGpt(c.blocks), c.shape);
  ASSERT_TRUE(plan.Validate().ok()) << plan.Validate().ToString();
  StatusOr<JobLayout> layout = JobLayout::Create(plan, c.steps);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  Status deadlock = layout->CheckNoDeadlock();
  EXPECT_TRUE(deadlock.ok()) << deadlock.ToString();
  EXPECT_EQ(layout->NumRanks(), plan.devices);
  EXPECT_EQ(layout->Steps(), c.steps);
  const bool split = plan.schedule == ScheduleKind::kZbH1;
  EXPECT_EQ(layout->SplitBackward(), split);

  // (kind, stage, micro-batch) -> the tp-0 ranks whose lists hold it.
  std::map<std::tuple<int, int, int>, std::vector<int>> seen;
  const RankMap& map = layout->rank_map();
  for (int rank = 0; rank < layout->NumRanks(); ++rank) {
    MeshCoords coords = map.Coords(rank);
    if (coords.tp != 0) {
      const int leader = map.Rank({coords.dp, coords.pp, 0});
      EXPECT_EQ(layout->ProgramOf(rank), layout->ProgramOf(leader)) << "rank " << rank;
      continue;
    }
    for (const Action& a : layout->ProgramOf(rank)) {
      seen[{static_cast<int>(a.kind), a.stage, a.micro_batch}].push_back(rank);
    }
  }
  size_t expected_entries = 0;
  for (ActionKind kind : {ActionKind::kForward, ActionKind::kBackward, ActionKind::kWeight}) {
    const size_t want = kind != ActionKind::kWeight || split ? 1 : 0;
    for (int s = 0; s < layout->NumStages(); ++s) {
      for (int j = 0; j < layout->TotalMicroBatches(); ++j) {
        Action a{kind, s, j};
        auto it = seen.find({static_cast<int>(kind), s, j});
        const std::vector<int> ranks = it == seen.end() ? std::vector<int>() : it->second;
        ASSERT_EQ(ranks.size(), want) << ActionToString(a);
        if (want == 0) continue;
        ++expected_entries;
        EXPECT_EQ(ranks.front(), layout->RankOf(s, j, 0, 0)) << ActionToString(a);
        for (int t = 0; t < plan.mesh.tp; ++t) {
          EXPECT_EQ(map.Coords(layout->RankOf(s, j, t, 0)).tp, t) << ActionToString(a);
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), expected_entries) << "actions outside the step's range";
}

// NCCL matches a channel's transfers by order: every generated layout posts them in one order
// on both ranks of every channel.
TEST_P(JobLayoutCoverageTest, EveryChannelMeetsItsTransfersInOneOrder) {
  const LayoutCase& c = GetParam();
  StatusOr<JobLayout> layout = JobLayout::Create(MakePlan(TinyGpt(c.blocks), c.shape), c.steps);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  Status in_order = layout->CheckInOrderTransfers();
  EXPECT_TRUE(in_order.ok()) << in_order.ToString();
}

INSTANTIATE_TEST_SUITE_P(Schedules, JobLayoutCoverageTest, ::testing::ValuesIn(AllLayoutCases()),
                         [](const ::testing::TestParamInfo<LayoutCase>& param_info) {
                           return param_info.param.name;
                         });

// The 1F1B layout of gpt-tiny with these replicas and micro-batches over `steps` steps.
StatusOr<JobLayout> ReplicatedLayout(std::vector<int> replicas, int micro_batches, int steps = 1) {
  PlanShape shape;
  shape.replicas = std::move(replicas);
  shape.num_micro_batches = micro_batches;
  return JobLayout::Create(MakePlan(TinyGpt(), shape), steps);
}

std::string ProgramText(const JobLayout& layout, int rank) {
  std::string text;
  for (const Action& a : layout.ProgramOf(rank)) {
    text += (text.empty() ? "" : " ") + ActionToString(a);
  }
  return text;
}

TEST(JobLayoutTest, NonUniformReplication) {
  StatusOr<JobLayout> layout = ReplicatedLayout({2, 1}, 4);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  ASSERT_EQ(layout->NumRanks(), 3);
  const RankMap& map = layout->rank_map();
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 0, 0})), "0F0 0F2 0B0 0B2");
  EXPECT_EQ(ProgramText(*layout, map.Rank({1, 0, 0})), "0F1 0F3 0B1 0B3");
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 1, 0})), "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3");
  EXPECT_EQ(layout->RankOf(0, 3, 0, 0), map.Rank({1, 0, 0}));
  EXPECT_EQ(layout->RankOf(1, 3, 0, 0), map.Rank({0, 1, 0}));
  EXPECT_EQ(layout->StagesOf(map.Rank({1, 0, 0})), std::vector<int>{0});
  EXPECT_EQ(layout->StagesOf(map.Rank({0, 1, 0})), std::vector<int>{1});
}

// The header's worked example: M = 4, replicas {3, 1}, 1F1B, pp 2: position 0's lanes take
// 2, 1 and 1 micro-batches round robin.
TEST(JobLayoutTest, WorkedExampleOfRoundRobinLanes) {
  StatusOr<JobLayout> layout = ReplicatedLayout({3, 1}, 4);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  ASSERT_EQ(layout->NumRanks(), 4);
  const RankMap& map = layout->rank_map();
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 0, 0})), "0F0 0F3 0B0 0B3");
  EXPECT_EQ(ProgramText(*layout, map.Rank({1, 0, 0})), "0F1 0B1");
  EXPECT_EQ(ProgramText(*layout, map.Rank({2, 0, 0})), "0F2 0B2");
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 1, 0})), "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3");
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(layout->RankOf(0, j, 0, 0), map.Rank({j % 3, 0, 0})) << "micro-batch " << j;
    EXPECT_EQ(layout->RankOf(1, j, 0, 0), map.Rank({0, 1, 0})) << "micro-batch " << j;
  }
  EXPECT_TRUE(layout->CheckNoDeadlock().ok());
  EXPECT_TRUE(layout->CheckInOrderTransfers().ok());
}

// Two steps: step k's micro-batch j is k·M + j, and it runs on the replica of j.
TEST(JobLayoutTest, SecondStepMicroBatchesFollowTheFirst) {
  StatusOr<JobLayout> layout = ReplicatedLayout({2, 1}, 4, 2);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->TotalMicroBatches(), 8);
  EXPECT_EQ(ProgramText(*layout, layout->rank_map().Rank({1, 0, 0})),
            "0F1 0F3 0B1 0B3 0F5 0F7 0B5 0B7");
  EXPECT_EQ(layout->RankOf(0, 7, 0, 0), layout->rank_map().Rank({1, 0, 0}));
}

// Every replica vector up to M for pp 2 to 4 and M up to 6, two steps: the round-robin
// lanes of GPipe, 1F1B and ZB-H1 never deadlock and meet every pair's transfers in one order.
TEST(JobLayoutTest, EveryRoundRobinLayoutRunsInOrder) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    for (int pp = 2; pp <= 4; ++pp) {
      for (int m = 1; m <= 6; ++m) {
        std::vector<int> replicas(pp, 1);
        for (bool more = true; more;) {
          PlanShape shape;
          shape.schedule = kind;
          shape.replicas = replicas;
          shape.num_micro_batches = m;
          StatusOr<JobLayout> layout = JobLayout::Create(MakePlan(TinyGpt(), shape), 2);
          ASSERT_TRUE(layout.ok()) << layout.status().ToString();
          const std::string name = NameOf(ScheduleKindNames(), kind) + " " +
                                   ReplicasName(replicas) + " m " + std::to_string(m);
          EXPECT_TRUE(layout->CheckNoDeadlock().ok()) << name;
          EXPECT_TRUE(layout->CheckInOrderTransfers().ok()) << name;
          int p = 0;  // the next replica vector, as an odometer over 1..m
          while (p < pp && ++replicas[p] > m) replicas[p++] = 1;
          more = p < pp;
        }
      }
    }
  }
}

// Position 1 has more replicas than position 0 can feed: its lanes start with no warm-up
// (core/replica_lanes.h), so replica 0 runs 1F0 1B0 before 1F3, which waits for 0B0.
TEST(JobLayoutTest, LaneWarmUpFollowsWhatTheFormerPositionsFeed) {
  StatusOr<JobLayout> layout = ReplicatedLayout({1, 3, 1}, 4);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  const RankMap& map = layout->rank_map();
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 0, 0})), "0F0 0F1 0F2 0B0 0F3 0B1 0B2 0B3");
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 1, 0})), "1F0 1B0 1F3 1B3");
  EXPECT_EQ(ProgramText(*layout, map.Rank({1, 1, 0})), "1F1 1B1");
  EXPECT_EQ(ProgramText(*layout, map.Rank({0, 2, 0})), "2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3");
  EXPECT_TRUE(layout->CheckNoDeadlock().ok()) << layout->CheckNoDeadlock().ToString();
}

// Interleaved 1F1B over pp 2 with v 2: stages 0 and 2 on rank 0, 1 and 3 on rank 1.
StatusOr<JobLayout> InterleavedPp2V2() {
  return JobLayout::Create(MakePlan(TinyGpt(), PlanShape{.schedule = ScheduleKind::kInterleaved1F1B,
                                                         .replicas = {1, 1},
                                                         .virtual_stages = 2}));
}

TEST(JobLayoutTest, InterleavedStagesOfAPosition) {
  StatusOr<JobLayout> layout = InterleavedPp2V2();
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->NumStages(), 4);
  EXPECT_EQ(layout->StagesOf(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(layout->StagesOf(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(layout->PositionOf(3), 1);
  EXPECT_EQ(layout->EndLayer(0), 2);  // 5 layers over 4 stages: 2, 1, 1, 1
  EXPECT_EQ(layout->LastStage(), 3);
}

// pipeline_links.h's worked example: six channels between the two ranks, in increasing order.
TEST(JobLayoutTest, ChannelsOfInterleavedRanks) {
  StatusOr<JobLayout> layout = InterleavedPp2V2();
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  const std::vector<PipelineChannel> want = {{0, 1, 0, true},  {0, 1, 1, false}, {0, 1, 2, true},
                                             {1, 0, 0, false}, {1, 0, 1, true},  {1, 0, 2, false}};
  EXPECT_EQ(layout->ChannelsOf(0), want);
  EXPECT_EQ(layout->ChannelsOf(1), want);
  EXPECT_EQ(want[3].ToString(), "gradients across boundary 0 from rank 1 to rank 0");
}

TEST(JobLayoutTest, ModelWithoutEmbeddingIsInvalid) {
  ModelSpec model = TinyGpt(2, /*tied=*/false);
  model.layers.erase(model.layers.begin());  // gpt_block ×2, final_norm, lm_head
  StatusOr<JobLayout> layout = JobLayout::Create(MakePlan(model, PlanShape{}));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(layout.status().message(), HasSubstr("embedding"));
}

TEST(JobLayoutTest, ModelWithoutLmHeadIsInvalid) {
  ModelSpec model = TinyGpt(2, /*tied=*/false);
  model.layers.pop_back();
  StatusOr<JobLayout> layout = JobLayout::Create(MakePlan(model, PlanShape{}));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(layout.status().message(), HasSubstr("lm_head"));
}

// The position with one replica would run M = 2 micro-batches, which naive cannot: the plan's
// check refuses it before any list is built.
TEST(JobLayoutTest, NaiveNeedsOneMicroBatchOnEveryPosition) {
  PlanShape shape;
  shape.schedule = ScheduleKind::kNaive;
  shape.replicas = {2, 1};
  shape.num_micro_batches = 2;
  StatusOr<JobLayout> layout = JobLayout::Create(MakePlan(TinyGpt(), shape));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(layout.status().message(), HasSubstr("one micro-batch per replica"));
  EXPECT_THAT(layout.status().message(), HasSubstr("stage 1 has 1"));
}

TEST(JobLayoutTest, InvalidPlanAndStepsAreRejected) {
  Plan plan = MakePlan(TinyGpt(), PlanShape{});
  EXPECT_EQ(JobLayout::Create(plan, 0).status().code(), StatusCode::kInvalidArgument);
  plan.devices = 3;
  EXPECT_EQ(JobLayout::Create(plan).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trident
