#include "core/rank_map.h"

#include <gtest/gtest.h>

namespace trident {
namespace {

TEST(RankMap, WorkedExampleFromTheHeader) {
  StatusOr<RankMap> map = RankMap::Create(2, {2, 1});
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->NumRanks(), 6);
  EXPECT_EQ(map->Coords(3), (MeshCoords{1, 0, 1}));
  EXPECT_EQ(map->Rank({0, 1, 1}), 5);
  EXPECT_EQ(map->TpGroup(3), (std::vector<int>{2, 3}));
  EXPECT_EQ(map->DpGroup(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(map->DpGroup(4), (std::vector<int>{4}));
}

TEST(RankMap, UniformMeshIsTpFastestThenDpThenPp) {
  StatusOr<RankMap> map = RankMap::Create(2, {2, 2});  // dp 2, pp 2, tp 2
  ASSERT_TRUE(map.ok());
  for (int rank = 0; rank < map->NumRanks(); ++rank) {
    MeshCoords c = map->Coords(rank);
    EXPECT_EQ(rank, (c.pp * 2 + c.dp) * 2 + c.tp);
    EXPECT_EQ(map->Rank(c), rank);
  }
}

TEST(RankMap, RejectsBadShapes) {
  EXPECT_FALSE(RankMap::Create(0, {1}).ok());
  EXPECT_FALSE(RankMap::Create(1, {}).ok());
  EXPECT_FALSE(RankMap::Create(1, {1, 0}).ok());
}

}  // namespace
}  // namespace trident
