// Element types of tensors, the names files use for them, and bf16's conversions.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "core/names.h"

namespace trident {

enum class DType { kFp32, kBf16, kFp16 };

int DTypeBytes(DType dtype);
const NameTable<DType>& DTypeNames();  // "fp32", "bf16", "fp16"
inline const std::string& DTypeName(DType dtype) { return NameOf(DTypeNames(), dtype); }

// x rounded to the nearest bf16 (the upper 16 bits of an fp32 pattern), ties to even; a NaN
// stays a (quiet) NaN of the same sign.
inline uint16_t ToBf16(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// The fp32 value of a bf16 pattern (exact).
inline float FromBf16(uint16_t x) { return std::bit_cast<float>(static_cast<uint32_t>(x) << 16); }

}  // namespace trident
