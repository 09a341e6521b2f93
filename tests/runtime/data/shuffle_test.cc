#include "runtime/data/shuffle.h"

#include <gtest/gtest.h>

#include <vector>

namespace trident {
namespace {

std::vector<int64_t> Order(int64_t n, uint64_t seed, uint64_t epoch) {
  IndexPermutation permutation(n, seed, epoch);
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i) order.push_back(permutation(i));
  return order;
}

bool IsPermutation(const std::vector<int64_t>& order) {
  std::vector<bool> seen(order.size(), false);
  for (int64_t value : order) {
    if (value < 0 || value >= static_cast<int64_t>(order.size()) || seen[value]) return false;
    seen[value] = true;
  }
  return true;
}

TEST(IndexPermutationTest, IsABijectionForEverySize) {
  for (int64_t n = 1; n <= 300; ++n) {
    for (uint64_t seed : {0ULL, 7ULL, 0xFFFFFFFFFFFFFFFFULL}) {
      EXPECT_TRUE(IsPermutation(Order(n, seed, n % 3))) << "n=" << n << " seed=" << seed;
    }
  }
  for (int64_t n : {1000, 1024, 1025, 4097, 65536, 100003}) {
    EXPECT_TRUE(IsPermutation(Order(n, 42, 1))) << "n=" << n;
  }
}

TEST(IndexPermutationTest, IsAPureFunctionOfSizeSeedAndEpoch) {
  EXPECT_EQ(Order(1000, 5, 2), Order(1000, 5, 2));
  EXPECT_NE(Order(1000, 5, 2), Order(1000, 5, 3));
  EXPECT_NE(Order(1000, 5, 2), Order(1000, 6, 2));
}

TEST(IndexPermutationTest, ShufflesRatherThanShifts) {
  // Adjacent positions should rarely map to adjacent values in a shuffled order.
  std::vector<int64_t> order = Order(10000, 1, 0);
  int adjacent = 0;
  for (size_t i = 1; i < order.size(); ++i) adjacent += std::abs(order[i] - order[i - 1]) == 1;
  EXPECT_LT(adjacent, 20);  // a uniform shuffle expects about 2
}

TEST(IndexPermutationTest, FirstElementIsRoughlyUniformOverEpochs) {
  // 10,000 epochs of n = 10: each value should come first about 1,000 times; the binomial
  // standard deviation is sqrt(10000 · 0.1 · 0.9) = 30, so ±150 is 5 sigma.
  constexpr int kEpochs = 10000;
  std::vector<int> first(10, 0);
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    ++first[static_cast<size_t>(IndexPermutation(10, 3, static_cast<uint64_t>(epoch))(0))];
  }
  for (int count : first) EXPECT_NEAR(count, kEpochs / 10, 150);
}

}  // namespace
}  // namespace trident
