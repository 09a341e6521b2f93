#include "runtime/checkpoint/init_values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace trident {
namespace {

HostTensor Gathered(uint64_t seed, const Shape& shape, SliceAxis axis, int tp) {
  std::vector<HostTensor> shards;
  for (int r = 0; r < tp; ++r) {
    shards.push_back(InitValues(seed, 3, "mlp.fc1.weight", InitKind::Normal(0.02), shape,
                                ShardSlice(shape, axis, tp, r)));
  }
  StatusOr<HostTensor> full = ConcatenateShards(shards, axis);
  EXPECT_TRUE(full.ok()) << full.status().ToString();
  return std::move(full).value();
}

TEST(InitValuesTest, TpShardsConcatenateToTheFullTensorBitForBit) {
  for (const Shape& shape : {Shape{64, 48}, Shape{10, 7}, Shape{4, 3, 8}}) {
    HostTensor full = InitValues(11, 3, "mlp.fc1.weight", InitKind::Normal(0.02), shape);
    for (SliceAxis axis : {SliceAxis::kRows, SliceAxis::kColumns}) {
      for (int tp : {2, 4}) {
        EXPECT_TRUE(Gathered(11, shape, axis, tp).BitwiseEquals(full))
            << ShapeToString(shape) << " tp " << tp << " axis " << static_cast<int>(axis);
      }
    }
  }
}

TEST(InitValuesTest, ShardOfABiasIsARangeOfElements) {
  HostTensor full = InitValues(5, 1, "attn.qkv.bias", InitKind::Normal(1.0), {24});
  HostTensor shard =
      InitValues(5, 1, "attn.qkv.bias", InitKind::Normal(1.0), {24}, Slice::Rows(12, 18));
  ASSERT_EQ(shard.values.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(shard.values[i], full.values[12 + i]);
}

TEST(InitValuesTest, ElementIsAPureFunctionOfSeedLayerNameAndIndex) {
  const Shape shape = {16, 16};
  const InitKind normal = InitKind::Normal(0.02);
  HostTensor base = InitValues(1, 2, "w", normal, shape);
  EXPECT_TRUE(InitValues(1, 2, "w", normal, shape).BitwiseEquals(base));
  EXPECT_FALSE(InitValues(2, 2, "w", normal, shape).BitwiseEquals(base));
  EXPECT_FALSE(InitValues(1, 3, "w", normal, shape).BitwiseEquals(base));
  EXPECT_FALSE(InitValues(1, 2, "v", normal, shape).BitwiseEquals(base));
  const uint64_t key = InitKey(1, 2, "w");
  for (int64_t e = 0; e < 256; ++e) {
    EXPECT_EQ(base.values[static_cast<size_t>(e)], InitElement(key, normal, e));
  }
  // The full shape does not enter: element e of a [256] view is element e of [16, 16].
  EXPECT_EQ(InitValues(1, 2, "w", normal, {256}).values, base.values);
}

TEST(InitValuesTest, GeneratorIsPinned) {
  // Checkpoints and cross-version comparisons rely on these exact values never changing.
  HostTensor values = InitValues(42, 0, "embedding.weight", InitKind::Normal(1.0), {4});
  EXPECT_THAT(values.values, ::testing::ElementsAre(0x1.66ab18p+0f, -0x1.433178p+1f, 0x1.84cd68p+0f,
                                                    0x1.c995e8p-1f));
}

TEST(InitValuesTest, NormalStatisticsMatchTheRequestedStd) {
  // 2^20 samples of N(0, 0.02^2). Standard errors: mean σ/√n = 1.95e-5, std σ/√(2n) =
  // 1.38e-5, fraction within 1σ √(0.683·0.317/n) = 4.5e-4; the bounds are 5 standard
  // errors (the values are deterministic, so this is a fixed check, not a flaky one).
  constexpr double kStd = 0.02;
  HostTensor tensor = InitValues(7, 0, "big", InitKind::Normal(kStd), {1024, 1024});
  const double n = static_cast<double>(tensor.values.size());
  double sum = 0, sum_sq = 0, within_one = 0, within_two = 0;
  for (float v : tensor.values) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
    within_one += std::abs(v) < kStd;
    within_two += std::abs(v) < 2 * kStd;
  }
  const double mean = sum / n;
  const double std = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 5 * kStd / std::sqrt(n));
  EXPECT_NEAR(std, kStd, 5 * kStd / std::sqrt(2 * n));
  EXPECT_NEAR(within_one / n, 0.682689, 5 * std::sqrt(0.683 * 0.317 / n));
  EXPECT_NEAR(within_two / n, 0.954500, 5 * std::sqrt(0.9545 * 0.0455 / n));
}

TEST(InitValuesTest, ZerosAndOnes) {
  HostTensor zeros = InitValues(1, 0, "b", InitKind::Zeros(), {3, 2}, Slice::Columns(1, 2));
  EXPECT_EQ(zeros.shape, (Shape{3, 1}));
  EXPECT_EQ(zeros.values, std::vector<float>(3, 0.0f));
  HostTensor ones = InitValues(1, 0, "ln.weight", InitKind::Ones(), {5});
  EXPECT_EQ(ones.values, std::vector<float>(5, 1.0f));
  EXPECT_EQ(InitKind::Normal(0.5).ToString(), "normal(0.500000)");
}

}  // namespace
}  // namespace trident
