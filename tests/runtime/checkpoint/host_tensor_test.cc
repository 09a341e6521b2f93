#include "runtime/checkpoint/host_tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trident {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HostTensor Iota(Shape shape) {
  HostTensor tensor{shape, std::vector<float>(static_cast<size_t>(*CountElements(shape)))};
  for (size_t i = 0; i < tensor.values.size(); ++i) tensor.values[i] = static_cast<float>(i);
  return tensor;
}

TEST(HostTensorTest, ShapeHelpers) {
  EXPECT_EQ(ShapeToString({256, 64}), "[256, 64]");
  EXPECT_EQ(ShapeToString({}), "[]");
  EXPECT_EQ(CountElements({}), 1);
  EXPECT_EQ(CountElements({3, 0, 5}), 0);
  EXPECT_EQ(CountElements({-1, 2}), std::nullopt);
  EXPECT_EQ(CountElements({int64_t{1} << 40, int64_t{1} << 40}), std::nullopt);
}

TEST(HostTensorTest, ShardSliceSplitsEvenlyOrPadsLikeMegatron) {
  EXPECT_EQ(ShardSlice({8, 4}, SliceAxis::kRows, 2, 1), Slice::Rows(4, 8));
  EXPECT_EQ(ShardSlice({8, 4}, SliceAxis::kColumns, 4, 3), Slice::Columns(3, 4));
  EXPECT_EQ(ShardSlice({8, 4}, SliceAxis::kFull, 4, 3), Slice::Full());
  // d = 10, tp = 4: chunks of ceil(10 / 4) = 3.
  std::vector<Slice> slices;
  for (int r = 0; r < 4; ++r) slices.push_back(ShardSlice({10}, SliceAxis::kRows, 4, r));
  EXPECT_THAT(slices, ElementsAre(Slice::Rows(0, 3), Slice::Rows(3, 6), Slice::Rows(6, 9),
                                  Slice::Rows(9, 10)));
  EXPECT_EQ(ShardSlice({2}, SliceAxis::kRows, 4, 3), Slice::Rows(2, 2));  // an empty shard
}

TEST(HostTensorTest, CheckSliceExplainsWhatIsWrong) {
  EXPECT_TRUE(CheckSlice({6, 4}, Slice::Rows(2, 6)).ok());
  EXPECT_TRUE(CheckSlice({}, Slice::Full()).ok());
  EXPECT_THAT(CheckSlice({6, 4}, Slice::Rows(4, 8)).message(),
              HasSubstr("rows [4, 8) is outside shape [6, 4]"));
  EXPECT_THAT(CheckSlice({6}, Slice::Columns(0, 1)).message(),
              HasSubstr("at least 2 dims, got shape [6]"));
  EXPECT_FALSE(CheckSlice({6, 4}, Slice::Columns(3, 2)).ok());
  EXPECT_FALSE(CheckSlice({6, 4}, Slice::Columns(-1, 2)).ok());
  EXPECT_FALSE(CheckSlice({-6, 4}, Slice::Full()).ok());
}

TEST(HostTensorTest, TakeSliceOfRowsAndColumns) {
  HostTensor full = Iota({3, 4});
  HostTensor rows = TakeSlice(full, Slice::Rows(1, 3));
  EXPECT_EQ(rows.shape, (Shape{2, 4}));
  EXPECT_THAT(rows.values, ElementsAre(4, 5, 6, 7, 8, 9, 10, 11));
  HostTensor columns = TakeSlice(full, Slice::Columns(1, 3));
  EXPECT_EQ(columns.shape, (Shape{3, 2}));
  EXPECT_THAT(columns.values, ElementsAre(1, 2, 5, 6, 9, 10));
  HostTensor three_d = TakeSlice(Iota({2, 2, 3}), Slice::Columns(2, 3));
  EXPECT_THAT(three_d.values, ElementsAre(2, 5, 8, 11));
}

TEST(HostTensorTest, ConcatenateShardsInvertsSharding) {
  HostTensor full = Iota({6, 10});
  for (SliceAxis axis : {SliceAxis::kRows, SliceAxis::kColumns}) {
    for (int tp : {1, 2, 3, 4, 7}) {
      std::vector<HostTensor> shards;
      for (int r = 0; r < tp; ++r)
        shards.push_back(TakeSlice(full, ShardSlice(full.shape, axis, tp, r)));
      StatusOr<HostTensor> joined = ConcatenateShards(shards, axis);
      ASSERT_TRUE(joined.ok()) << joined.status().ToString();
      EXPECT_TRUE(joined->BitwiseEquals(full)) << "tp " << tp;
    }
  }
}

TEST(HostTensorTest, ConcatenateShardsRejectsMismatchedShards) {
  StatusOr<HostTensor> joined = ConcatenateShards({Iota({2, 3}), Iota({2, 4})}, SliceAxis::kRows);
  ASSERT_FALSE(joined.ok());
  EXPECT_THAT(joined.status().message(), HasSubstr("shard 1 has shape [2, 4]"));
  EXPECT_FALSE(ConcatenateShards({}, SliceAxis::kRows).ok());
  EXPECT_FALSE(ConcatenateShards({Iota({2})}, SliceAxis::kColumns).ok());
  HostTensor broken{{2, 2}, {1.0f}};
  EXPECT_FALSE(ConcatenateShards({broken}, SliceAxis::kRows).ok());
}

TEST(HostTensorTest, BitwiseEqualsComparesBits) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor a{{2}, {nan, 0.0f}};
  HostTensor b{{2}, {nan, 0.0f}};
  HostTensor c{{2}, {nan, -0.0f}};
  EXPECT_TRUE(a.BitwiseEquals(b));
  EXPECT_FALSE(a == b);  // by value, NaN != NaN
  EXPECT_FALSE(a.BitwiseEquals(c));
  EXPECT_FALSE(a.BitwiseEquals(HostTensor{{1, 2}, {nan, 0.0f}}));
}

}  // namespace
}  // namespace trident
