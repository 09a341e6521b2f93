#include "launcher/placement.h"

#include <gtest/gtest.h>

#include "tests/launcher/test_plans.h"

namespace trident {
namespace {

using testing::LaunchPlan;

std::vector<HostSlots> Hosts(std::string_view list) { return *ParseHostList(list); }

// What placement promises, recomputed from the rank map alone: ranks in order, host by host,
// and each rank on the same host as every member of its tp group.
void ExpectPlacementHonoursRankMap(const Plan& plan, const Placement& placement) {
  RankMap map = plan.MakeRankMap();
  std::vector<int> host_of_rank = placement.HostOfRank();
  ASSERT_EQ(static_cast<int>(host_of_rank.size()), map.NumRanks());
  for (int rank = 0; rank < map.NumRanks(); ++rank) {
    ASSERT_GE(host_of_rank[rank], 0) << "rank " << rank << " has no host";
    if (rank > 0) {
      EXPECT_GE(host_of_rank[rank], host_of_rank[rank - 1]) << "rank " << rank;
    }
    for (int peer : map.TpGroup(rank)) {
      EXPECT_EQ(host_of_rank[peer], host_of_rank[rank]) << "tp group of rank " << rank;
    }
  }
  for (const HostRanks& host : placement.hosts) EXPECT_LE(host.num_ranks, host.slots);
  EXPECT_TRUE(CheckPlacement(map, placement).ok());
}

TEST(PlacementTest, TwoNodePlanPutsOneNodeOnEachHost) {
  // dp 2 x pp 4 x tp 2 = 16 ranks planned for nodes of 8.
  Plan plan = LaunchPlan(2, {2, 2, 2, 2}, 8);
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("a:8,b:8"), false);
  ASSERT_TRUE(placement.ok()) << placement.status().ToString();
  EXPECT_EQ(placement->hosts, (std::vector<HostRanks>{{"a", 8, 0, 8}, {"b", 8, 8, 8}}));
  EXPECT_FALSE(placement->local);
  ExpectPlacementHonoursRankMap(plan, *placement);
}

TEST(PlacementTest, ABigHostTakesSeveralWholeNodesAndSpareHostsStayIdle) {
  Plan plan = LaunchPlan(2, {2, 1, 1, 2}, 4);  // 12 ranks, nodes of 4: 4, 4, 4
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("a:10,b:4,c:8"), false);
  ASSERT_TRUE(placement.ok()) << placement.status().ToString();
  EXPECT_EQ(placement->hosts,
            (std::vector<HostRanks>{{"a", 10, 0, 8}, {"b", 4, 8, 4}, {"c", 8, 12, 0}}));
  ExpectPlacementHonoursRankMap(plan, *placement);
}

TEST(PlacementTest, ASmallLastNodeFitsASmallHost) {
  Plan plan = LaunchPlan(2, {2, 1}, 4);  // 6 ranks in nodes of 4: 4, 2
  EXPECT_EQ(PlanNodeSizes(plan), (std::vector<int>{4, 2}));
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("a:4,b:2"), true);
  ASSERT_TRUE(placement.ok()) << placement.status().ToString();
  EXPECT_EQ(placement->hosts, (std::vector<HostRanks>{{"a", 4, 0, 4}, {"b", 2, 4, 2}}));
  ExpectPlacementHonoursRankMap(plan, *placement);
}

TEST(PlacementTest, TooFewSlotsNamesBothCountsAndTheFix) {
  Plan plan = LaunchPlan(2, {2, 2, 2, 2}, 8);
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("a:8,b:4"), false);
  ASSERT_FALSE(placement.ok());
  EXPECT_EQ(placement.status().message(),
            "p.yaml: the plan runs 16 ranks in 2 nodes of 8 devices but the hosts offer 12 slots "
            "(a:8, b:4); add hosts or slots, or re-plan for 12 devices (trident plan --devices "
            "12)");
}

TEST(PlacementTest, HostsSmallerThanThePlansNodesAreAMismatch) {
  Plan plan = LaunchPlan(2, {2, 2, 2, 2}, 8);
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("a:4,b:4,c:4,d:4"), false);
  ASSERT_FALSE(placement.ok());
  EXPECT_EQ(placement.status().message(),
            "p.yaml: the plan was made for nodes of 8 devices (devices_per_node: 8), so ranks "
            "0-7 must share a host, but host 'a' has 4 slots; give each host at least 8 slots, "
            "or re-plan for nodes of 4 devices (a cluster file with devices_per_node: 4)");
}

TEST(PlacementTest, SlotsThatHoldNoWholeNodeAreNotEnough) {
  Plan plan = LaunchPlan(2, {2, 2, 2}, 4);  // 12 ranks in nodes of 4
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("a:6,b:6"), false);
  ASSERT_FALSE(placement.ok());
  EXPECT_NE(placement.status().message().find("hold only 2 whole nodes"), std::string::npos)
      << placement.status().message();
}

TEST(PlacementTest, NpCheckWantsEverySlotUsed) {
  Plan plan = LaunchPlan(2, {1, 1}, 2);  // 4 ranks in nodes of 2
  EXPECT_TRUE(PlaceRanks(plan, "p.yaml", Hosts("a:2,b:2"), true).ok());
  StatusOr<Placement> more = PlaceRanks(plan, "p.yaml", Hosts("a:2,b:2,c:2"), true);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().message(),
            "--np-check: p.yaml runs 4 ranks but the hosts offer 6 slots (a:2, b:2, c:2); list "
            "exactly the plan's ranks");
  StatusOr<Placement> uneven = PlaceRanks(plan, "p.yaml", Hosts("a:3,b:1"), true);
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.status().message().find("ranks 2-3 must share a host, but host 'b' has 1"),
            std::string::npos)
      << uneven.status().message();
  EXPECT_TRUE(PlaceRanks(plan, "p.yaml", Hosts("a:2,b:2,c:2"), false).ok());
}

TEST(PlacementTest, LocalPlacementRunsEveryRankHere) {
  Plan plan = LaunchPlan(1, {2, 2}, 2);
  Placement placement = PlaceLocally(plan.devices);
  EXPECT_TRUE(placement.local);
  EXPECT_EQ(placement.NumRanks(), 4);
  ExpectPlacementHonoursRankMap(plan, placement);
}

// The independent check is not vacuous: it catches a tp group cut in two and ranks out of
// order.
TEST(PlacementTest, CheckPlacementCatchesBrokenPlacements) {
  Plan plan = LaunchPlan(2, {1, 1}, 2);
  RankMap map = plan.MakeRankMap();
  Placement split;
  split.hosts = {{"a", 3, 0, 3}, {"b", 1, 3, 1}};
  Status status = CheckPlacement(map, split);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tp group of rank 2 spans hosts 'a' and 'b'"), std::string::npos)
      << status.message();
  Placement shuffled;
  shuffled.hosts = {{"a", 2, 2, 2}, {"b", 2, 0, 2}};
  EXPECT_FALSE(CheckPlacement(map, shuffled).ok());
  Placement short_of_ranks;
  short_of_ranks.hosts = {{"a", 2, 0, 2}};
  EXPECT_FALSE(CheckPlacement(map, short_of_ranks).ok());
}

TEST(PlacementTest, TableShowsEachHostsRanksAndCoordinates) {
  Plan plan = LaunchPlan(2, {1, 1}, 2);
  StatusOr<Placement> placement = PlaceRanks(plan, "p.yaml", Hosts("alpha:2,b:2,c:1"), false);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(PlacementTable(plan, *placement),
            "  host   slots  ranks      (dp, pp, tp) first .. last\n"
            "  alpha  2      0-1        (0, 0, 0) .. (0, 0, 1)\n"
            "  b      2      2-3        (0, 1, 0) .. (0, 1, 1)\n"
            "  c      1      -          (not needed)\n");
}

}  // namespace
}  // namespace trident
