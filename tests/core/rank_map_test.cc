#include "core/rank_map.h"

#include <gtest/gtest.h>

namespace trident {
namespace {

TEST(RankMap, WorkedExampleFromTheHeader) {
  StatusOr<RankMap> map = RankMap::Create(2, 1, {2, 1});
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->NumRanks(), 6);
  EXPECT_EQ(map->Coords(3), (MeshCoords{1, 0, 1}));
  EXPECT_EQ(map->Rank({0, 1, 1}), 5);
  EXPECT_EQ(map->TpGroup(3), (std::vector<int>{2, 3}));
  EXPECT_EQ(map->GradGroup(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(map->GradGroup(4), (std::vector<int>{4}));
}

TEST(RankMap, UniformMeshIsTpFastestThenDpThenPp) {
  StatusOr<RankMap> map = RankMap::Create(2, 1, {2, 2});  // dp 2, pp 2, tp 2
  ASSERT_TRUE(map.ok());
  for (int rank = 0; rank < map->NumRanks(); ++rank) {
    MeshCoords c = map->Coords(rank);
    EXPECT_EQ(rank, (c.pp * 2 + c.dp) * 2 + c.tp);
    EXPECT_EQ(map->Rank(c), rank);
  }
}

TEST(RankMap, CpSitsBetweenTpAndTheReplicas) {
  StatusOr<RankMap> map = RankMap::Create(2, 2, {2, 1});  // tp 2, cp 2, replicas {2, 1}
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->NumRanks(), 12);
  EXPECT_EQ(map->Coords(6), (MeshCoords{.dp = 1, .pp = 0, .tp = 0, .cp = 1}));
  EXPECT_EQ(map->Rank({.dp = 0, .pp = 1, .tp = 1, .cp = 1}), 11);
  EXPECT_EQ(map->TpGroup(6), (std::vector<int>{6, 7}));
  EXPECT_EQ(map->CpGroup(5), (std::vector<int>{5, 7}));
  EXPECT_EQ(map->GradGroup(3), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(map->GradGroup(8), (std::vector<int>{8, 10}));
  for (int rank = 0; rank < map->NumRanks(); ++rank) EXPECT_EQ(map->Rank(map->Coords(rank)), rank);
}

TEST(RankMap, RejectsBadShapes) {
  EXPECT_FALSE(RankMap::Create(1, 0, {1}).ok());
  EXPECT_FALSE(RankMap::Create(0, 1, {1}).ok());
  EXPECT_FALSE(RankMap::Create(1, 1, {}).ok());
  EXPECT_FALSE(RankMap::Create(1, 1, {1, 0}).ok());
}

}  // namespace
}  // namespace trident
