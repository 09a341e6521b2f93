#include "runtime/data/shuffle.h"

#include <bit>

#include "core/check.h"

namespace trident {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

IndexPermutation::IndexPermutation(int64_t n, uint64_t seed, uint64_t epoch) : n_(n) {
  TRIDENT_CHECK(n >= 1) << "a permutation needs at least one element, got " << n;
  int bits = static_cast<int>(std::bit_width(static_cast<uint64_t>(n - 1)));
  half_bits_ = bits <= 2 ? 1 : (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  uint64_t key = SplitMix64(seed ^ SplitMix64(epoch ^ 0x5EEDC0DE5EEDC0DEULL));
  for (int r = 0; r < kRounds; ++r) keys_[r] = SplitMix64(key + static_cast<uint64_t>(r));
}

uint64_t IndexPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t key : keys_) {
    uint64_t mixed = left ^ (SplitMix64(right ^ key) & half_mask_);
    left = right;
    right = mixed;
  }
  return (left << half_bits_) | right;
}

int64_t IndexPermutation::operator()(int64_t index) const {
  TRIDENT_CHECK(index >= 0 && index < n_) << "index " << index << " of " << n_;
  uint64_t x = Encrypt(static_cast<uint64_t>(index));
  while (x >= static_cast<uint64_t>(n_)) x = Encrypt(x);
  return static_cast<int64_t>(x);
}

}  // namespace trident
