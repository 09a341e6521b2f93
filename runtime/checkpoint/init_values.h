// Plan-independent parameter initialization.
//
// Element e (row-major index) of the FULL tensor `param_name` of layer `layer_index` is a
// pure function of (seed, layer_index, param_name, e). A rank that holds a tensor-parallel
// shard computes only its slice, and gets the same bits the full tensor has there, so a
// model built under any tp (and any pipeline cut) starts from exactly the same weights.
//
// Generator (counter-based, no state):
//   key  = M(M(M(seed) ^ layer_index) ^ FNV-1a-64(param_name)),  M = SplitMix64's finalizer
//   r(c) = M(key + (c + 1)·0x9E3779B97F4A7C15)   — SplitMix64's output c of a stream at key
//   normal(std): u1 = (top 53 bits of r(2e) + 1)·2^-53 in (0, 1],
//                u2 = (top 53 bits of r(2e + 1))·2^-53 in [0, 1),
//                value = float(std · sqrt(−2 ln u1) · cos(2π u2))   (Box–Muller, cosine half;
//                computed in double, rounded once to float)
//   zeros / ones: 0 / 1.
// Worked example: row 4, column 6 of a full [8, 16] tensor is element e = 70. Rank 1 of
// tp = 2 holds rows [4, 8) and computes it as its local element 6; rank 1 of tp = 4 holding
// columns [4, 8) computes it as its local element 4·4 + 2 = 18; both evaluate e = 70.
// Bits are identical on every rank of one build (all ranks run the same binary). Another
// libm could round log or cos differently in the last double bit, which very rarely changes
// the float; a test pins a few values so a change of generator cannot go unnoticed.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/checkpoint/host_tensor.h"

namespace trident {

struct InitKind {
  enum class Type { kNormal, kZeros, kOnes };
  Type type = Type::kZeros;
  double std = 0.0;  // of kNormal; mean is 0

  static InitKind Normal(double std) { return {Type::kNormal, std}; }
  static InitKind Zeros() { return {Type::kZeros, 0.0}; }
  static InitKind Ones() { return {Type::kOnes, 0.0}; }
  std::string ToString() const;  // "normal(0.02)", "zeros", "ones"
  bool operator==(const InitKind&) const = default;
};

// The generator key of one parameter tensor.
uint64_t InitKey(uint64_t seed, int layer_index, std::string_view param_name);

// Element `element` of the full tensor whose key is `key`.
float InitElement(uint64_t key, const InitKind& kind, int64_t element);

// The values of `slice` of the full tensor (layer_index, param_name) of `full_shape`.
// REQUIRES: CheckSlice(full_shape, slice) ok; kind.std >= 0 and finite.
HostTensor InitValues(uint64_t seed, int layer_index, std::string_view param_name,
                      const InitKind& kind, const Shape& full_shape,
                      const Slice& slice = Slice::Full());

}  // namespace trident
