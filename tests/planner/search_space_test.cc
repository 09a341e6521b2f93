// The search's first step (planner/search_space.h): the configurations it enumerates, before
// anything is costed — every mesh of every unit with each schedule, sharding level and shard
// group it allows, per-stage replication where it is searched, the user's fixed replicas, and
// the order the scoring relies on.
#include "planner/search_space.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "planner_fixture.h"

namespace trident::search_internal {
namespace {

using Kind = SearchGroup::Kind;

int Count(const std::vector<SearchGroup>& groups, Kind kind) {
  int n = 0;
  for (const SearchGroup& g : groups) n += g.kind == kind ? 1 : 0;
  return n;
}

// GPT-3 1.3B on 16 A100s: every group's configurations share its unit, mesh and batching; a
// mesh's units multiply to the devices; sharded levels only where dp > 1.
TEST(SearchSpace, GroupsShareTheirBaseAndCoverTheDevices) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  const SearchRequest request = f->Request(16, 128);
  const std::vector<SearchGroup> groups = EnumerateSearch(*f->costs, request);
  ASSERT_FALSE(groups.empty());
  for (const SearchGroup& g : groups) {
    ASSERT_FALSE(g.configs.empty());
    const Config& b = g.base;
    EXPECT_EQ(16 % b.UnitRanks(), 0);
    if (g.kind == Kind::kMesh) {
      EXPECT_EQ(b.pp * b.dp * b.UnitRanks(), 16);
    }
    EXPECT_EQ(b.micro_batch * b.micro_batches, 128);
    for (const Config& c : g.configs) {
      EXPECT_EQ(std::tuple(c.tp, c.sp, c.cp, c.pp, c.dp, c.micro_batch, c.recompute),
                std::tuple(b.tp, b.sp, b.cp, b.pp, b.dp, b.micro_batch, b.recompute));
      if (c.sharding != DpSharding::kNone) {
        EXPECT_GT(c.dp, 1);
      }
      if (c.schedule == ScheduleKind::kInterleaved1F1B) {
        EXPECT_EQ(c.PerReplica() % c.pp, 0);
      }
    }
  }
  // 16 units at tp 1 (at most kMaxReplicatedUnits): per-stage replication is searched.
  EXPECT_GT(Count(groups, Kind::kReplicated), 0);
  EXPECT_EQ(Count(groups, Kind::kFixedReplicas), 0);
}

// tp first (as the cost model lists them), then within a unit the meshes by increasing pp
// before the per-stage groups.
TEST(SearchSpace, OrderIsTheSearchs) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  const std::vector<SearchGroup> groups = EnumerateSearch(*f->costs, f->Request(16, 128));
  for (size_t i = 1; i < groups.size(); ++i) {
    const SearchGroup& a = groups[i - 1];
    const SearchGroup& b = groups[i];
    EXPECT_LE(a.base.tp, b.base.tp) << i;
    const bool same_unit =
        std::tuple(a.base.tp, a.base.cp, a.base.sp) == std::tuple(b.base.tp, b.base.cp, b.base.sp);
    if (!same_unit) continue;
    EXPECT_FALSE(a.kind == Kind::kReplicated && b.kind == Kind::kMesh) << i;
    if (a.kind == b.kind) {
      EXPECT_LE(a.base.pp, b.base.pp) << i;
    }
  }
}

// Constraints narrow the space: --fix tp=2,pp=2, one schedule, one recompute mode, and no
// per-stage replication where dp is fixed.
TEST(SearchSpace, ConstraintsNarrowIt) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  SearchRequest request = f->Request(16, 128);
  request.constraints.tp = 2;
  request.constraints.pp = 2;
  request.constraints.dp = 4;
  request.constraints.schedules = {ScheduleKind::kZbH1};
  request.constraints.recompute = {RecomputeMode::kSelective};
  const std::vector<SearchGroup> groups = EnumerateSearch(*f->costs, request);
  ASSERT_FALSE(groups.empty());
  for (const SearchGroup& g : groups) {
    EXPECT_EQ(g.kind, Kind::kMesh);
    for (const Config& c : g.configs) {
      EXPECT_EQ(std::tuple(c.tp, c.pp, c.dp), std::tuple(2, 2, 4));
      EXPECT_EQ(c.schedule, ScheduleKind::kZbH1);
      EXPECT_EQ(c.recompute, RecomputeMode::kSelective);
    }
  }
}

// --replicas 5,3 on 8 A100s: groups of those counts (tp 1, the only unit whose units sum to 8),
// each with the schedules that run per-stage replication; no mesh, as the counts differ.
TEST(SearchSpace, FixedReplicasGiveTheirOwnGroups) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  SearchRequest request = f->Request(8, 64);
  request.constraints.replicas = {5, 3};
  const std::vector<SearchGroup> groups = EnumerateSearch(*f->costs, request);
  ASSERT_FALSE(groups.empty());
  std::set<ScheduleKind> schedules;
  for (const SearchGroup& g : groups) {
    EXPECT_EQ(g.kind, Kind::kFixedReplicas);
    EXPECT_EQ(g.base.pp, 2);
    EXPECT_EQ(g.base.UnitRanks(), 1);
    for (const Config& c : g.configs) schedules.insert(c.schedule);
  }
  EXPECT_EQ(schedules, (std::set<ScheduleKind>{ScheduleKind::k1F1B, ScheduleKind::kGpipe,
                                               ScheduleKind::kZbH1}));
}

}  // namespace
}  // namespace trident::search_internal
