#include "core/replica_lanes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace trident {
namespace {

std::string Text(const std::vector<Action>& actions) {
  std::string out;
  for (const Action& a : actions) out += (out.empty() ? "" : " ") + ActionToString(a);
  return out;
}

TEST(ReplicaLanesTest, WorkedExampleOfTheHeader) {
  StatusOr<std::vector<Lane>> lanes = ReplicaLanes(ScheduleKind::k1F1B, 2, 1, 4, {3, 1}, 1);
  ASSERT_TRUE(lanes.ok()) << lanes.status().message();
  ASSERT_EQ(lanes->size(), 4u);
  EXPECT_EQ(Text((*lanes)[0].actions), "0F0 0F3 0B0 0B3");
  EXPECT_EQ(Text((*lanes)[1].actions), "0F1 0B1");
  EXPECT_EQ(Text((*lanes)[2].actions), "0F2 0B2");
  EXPECT_EQ(Text((*lanes)[3].actions), "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3");
  EXPECT_EQ((*lanes)[0].micro_batches, 2);
  EXPECT_EQ((*lanes)[2].micro_batches, 1);
}

// Every schedule, every replication up to M, several steps: each position's lanes together
// run every (stage, micro-batch) of every step exactly once.
TEST(ReplicaLanesTest, LanesOfAPositionCoverItsWorkOnce) {
  for (ScheduleKind kind :
       {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1, ScheduleKind::kPipeDream}) {
    for (int m = 1; m <= 7; ++m) {
      for (int r = 1; r <= m; ++r) {
        StatusOr<std::vector<Lane>> lanes = ReplicaLanes(kind, 2, 1, m, {r, 1}, 2);
        ASSERT_TRUE(lanes.ok()) << lanes.status().message();
        std::set<std::tuple<int, int, int>> seen;
        for (const Lane& lane : *lanes) {
          for (const Action& a : lane.actions) {
            EXPECT_EQ(a.stage, lane.position);
            EXPECT_EQ(a.micro_batch % m % (lane.position == 0 ? r : 1), lane.replica);
            EXPECT_TRUE(seen.insert({static_cast<int>(a.kind), a.stage, a.micro_batch}).second);
          }
        }
        const size_t kinds = kind == ScheduleKind::kZbH1 ? 3 : 2;
        EXPECT_EQ(seen.size(), kinds * 2 * 2 * m) << "m " << m << " r " << r;
      }
    }
  }
}

// The header's warm-up example: position 1's three replicas would each run a forward ahead
// (1F0 1F3 before 1B0) that position 0, with one replica and two warm-up forwards, runs only
// after 0B0; they take warm-up 0. ZB-H1 lowers its B the same way and keeps W after it.
TEST(ReplicaLanesTest, WarmUpIsLoweredWhereTheFormerPositionsCannotFeedIt) {
  StatusOr<std::vector<Lane>> lanes = ReplicaLanes(ScheduleKind::k1F1B, 3, 1, 4, {1, 3, 1}, 1);
  ASSERT_TRUE(lanes.ok()) << lanes.status().message();
  ASSERT_EQ(lanes->size(), 5u);
  EXPECT_EQ(Text((*lanes)[0].actions), "0F0 0F1 0F2 0B0 0F3 0B1 0B2 0B3");
  EXPECT_EQ(Text((*lanes)[1].actions), "1F0 1B0 1F3 1B3");
  EXPECT_EQ(Text((*lanes)[4].actions), "2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3");
  lanes = ReplicaLanes(ScheduleKind::kZbH1, 3, 1, 4, {1, 3, 1}, 1);
  ASSERT_TRUE(lanes.ok()) << lanes.status().message();
  EXPECT_EQ(Text((*lanes)[1].actions), "1F0 1B0 1F3 1B3 1W0 1W3");
  // Uniform replication keeps every position's own list.
  lanes = ReplicaLanes(ScheduleKind::k1F1B, 3, 1, 6, {2, 2, 2}, 1);
  ASSERT_TRUE(lanes.ok()) << lanes.status().message();
  EXPECT_EQ(Text((*lanes)[0].actions), "0F0 0F2 0F4 0B0 0B2 0B4");
  EXPECT_EQ(Text((*lanes)[2].actions), "1F0 1F2 1B0 1F4 1B2 1B4");
}

TEST(ReplicaLanesTest, RefusesReplicasWithoutAMicroBatch) {
  StatusOr<std::vector<Lane>> lanes = ReplicaLanes(ScheduleKind::k1F1B, 2, 1, 2, {3, 1}, 1);
  ASSERT_FALSE(lanes.ok());
  EXPECT_NE(lanes.status().message().find("position 0 has 3 replicas"), std::string::npos)
      << lanes.status().message();
  EXPECT_FALSE(ReplicaLanes(ScheduleKind::k1F1B, 2, 1, 4, {1}, 1).ok());
}

TEST(ReplicaLanesTest, NamesThePositionWhoseCountTheGeneratorRefuses) {
  // Interleaved needs each lane's count to be a multiple of pp: 5 over 2 replicas is 3 + 2.
  StatusOr<std::vector<Lane>> lanes =
      ReplicaLanes(ScheduleKind::kInterleaved1F1B, 2, 2, 5, {2, 2}, 1);
  ASSERT_FALSE(lanes.ok());
  EXPECT_NE(lanes.status().message().find("pipeline position 0 (3 micro-batches on replica 0)"),
            std::string::npos)
      << lanes.status().message();
}

}  // namespace
}  // namespace trident
