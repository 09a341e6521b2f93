#include "runtime/checkpoint/init_values.h"

#include <cmath>
#include <numbers>

#include "core/check.h"

namespace trident {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

// SplitMix64's finalizer (Stafford's Mix13 variant): a bijective 64-bit avalanche mixer.
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t hash = 0xCBF29CE484222325ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ULL;
  }
  return hash;
}

// Output `counter` of the SplitMix64 stream that starts at `key`.
uint64_t StreamAt(uint64_t key, uint64_t counter) { return Mix(key + (counter + 1) * kGolden); }

// Standard normal for element `element`: Box–Muller on two stream outputs, cosine half only,
// so that each element depends on its own index alone.
double StandardNormal(uint64_t key, int64_t element) {
  constexpr double kTwoTo53 = 9007199254740992.0;
  uint64_t counter = 2 * static_cast<uint64_t>(element);
  double u1 = (static_cast<double>(StreamAt(key, counter) >> 11) + 1.0) / kTwoTo53;
  double u2 = static_cast<double>(StreamAt(key, counter + 1) >> 11) / kTwoTo53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

std::string InitKind::ToString() const {
  switch (type) {
    case Type::kNormal:
      return "normal(" + std::to_string(std) + ")";
    case Type::kZeros:
      return "zeros";
    case Type::kOnes:
      return "ones";
  }
  return "?";
}

uint64_t InitKey(uint64_t seed, int layer_index, std::string_view param_name) {
  uint64_t key = Mix(seed);
  key = Mix(key ^ static_cast<uint64_t>(static_cast<int64_t>(layer_index)));
  return Mix(key ^ Fnv1a64(param_name));
}

float InitElement(uint64_t key, const InitKind& kind, int64_t element) {
  switch (kind.type) {
    case InitKind::Type::kNormal:
      return static_cast<float>(kind.std * StandardNormal(key, element));
    case InitKind::Type::kZeros:
      return 0.0f;
    case InitKind::Type::kOnes:
      return 1.0f;
  }
  return 0.0f;
}

HostTensor InitValues(uint64_t seed, int layer_index, std::string_view param_name,
                      const InitKind& kind, const Shape& full_shape, const Slice& slice) {
  TRIDENT_CHECK(kind.std >= 0 && std::isfinite(kind.std)) << kind.ToString();
  SliceRuns runs = RunsOf(full_shape, slice);
  const uint64_t key = InitKey(seed, layer_index, param_name);
  HostTensor tensor{SliceShape(full_shape, slice), {}};
  tensor.values.reserve(static_cast<size_t>(runs.num_runs * runs.run_length));
  for (int64_t i = 0; i < runs.num_runs; ++i) {
    int64_t start = runs.first + i * runs.stride;
    for (int64_t e = start; e < start + runs.run_length; ++e) {
      tensor.values.push_back(InitElement(key, kind, e));
    }
  }
  return tensor;
}

}  // namespace trident
