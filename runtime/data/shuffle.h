// IndexPermutation: a pseudo-random order of [0, n) chosen by (seed, epoch), evaluated one
// index at a time in O(1) memory — no table of n entries, so any rank can ask for any
// position of any epoch without having seen the others.
//
// Construction: a balanced Feistel network with kRounds rounds on 2h bits, where 2^(2h) is
// the smallest even power of two >= n, is a bijection of [0, 2^(2h)). Cycle walking
// (re-encrypting until the value falls below n) restricts it to a bijection of [0, n); since
// 2^(2h) < 4n, a lookup takes fewer than 4 encryptions on average. Example: n = 1000 uses
// h = 5 (1024 values) and almost never walks.
// The round keys are SplitMix64 of (seed, epoch, round), so the order is a pure function of
// (n, seed, epoch): identical on every rank and under every parallel layout.
// Thread-safety: immutable after construction.
#pragma once

#include <array>
#include <cstdint>

namespace trident {

// SplitMix64's output function (Steele, Lea & Flood 2014): a fast 64-bit mixer whose outputs
// for consecutive inputs pass BigCrush. Used as a counter-based generator.
uint64_t SplitMix64(uint64_t x);

class IndexPermutation {
 public:
  static constexpr int kRounds = 6;

  // REQUIRES: n >= 1.
  IndexPermutation(int64_t n, uint64_t seed, uint64_t epoch);

  int64_t size() const { return n_; }
  // The element at position `index` of the order. REQUIRES: 0 <= index < size().
  int64_t operator()(int64_t index) const;

 private:
  uint64_t Encrypt(uint64_t x) const;

  int64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  std::array<uint64_t, kRounds> keys_;
};

}  // namespace trident
