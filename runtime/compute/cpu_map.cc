// CpuCompute's elementwise ops: one loop for every map of compute_maps.h. The elements are split
// across threads, and each thread's range is worked through in blocks of kBlock: the map gets an
// Eigen map of the block of each operand and computes on them in place (vectorized; shared
// subexpressions such as tanh or σ are evaluated once per block into stack arrays, without a
// heap temporary).
#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <variant>

#include "runtime/compute/compute_maps.h"
#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"

namespace trident {
namespace {

constexpr int64_t kBlock = 256;
using BlockArray = Eigen::Array<float, Eigen::Dynamic, 1, 0, kBlock, 1>;

// Elements touched per element of a map, as ParallelFor weighs work: a simple arithmetic map
// costs what a copy does; the transcendental ones (tanh, σ, √) and the optimizers more.
template <typename Op>
constexpr int64_t WorkPerElement() {
  if constexpr (std::is_same_v<Op, GeluMap> || std::is_same_v<Op, GeluGradMap> ||
                std::is_same_v<Op, SiluMap> || std::is_same_v<Op, SiluGradMap> ||
                std::is_same_v<Op, SwiGluMap> || std::is_same_v<Op, SwiGluGradMap>) {
    return 16;
  } else if constexpr (std::is_same_v<Op, AdamWMap>) {
    return 8;
  } else {
    return Op::kOperands;
  }
}

// Elements [b, e) of each operand. Operands the map only reads are mapped writable too (one V
// for every operand); the map never assigns them.
template <typename Op>
std::array<ArrayMap, Op::kOperands> MapsOf(const MapCall& call, int64_t b, int64_t e) {
  return [&]<size_t... k>(std::index_sequence<k...>) {
    return std::array<ArrayMap, Op::kOperands>{
        ArrayMap(static_cast<float*>(call.data[k]) + b, e - b)...};
  }
  (std::make_index_sequence<Op::kOperands>());
}

template <typename Op>
void RunBlocks(const Op& op, const MapCall& call, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t e = std::min(b + kBlock, end);
    std::array<ArrayMap, Op::kOperands> x = MapsOf<Op>(call, b, e);
    op(x.data());
  }
}

}  // namespace

// A block of fp32 elements mapped in place; temporaries live on the stack.
template <>
struct MapMath<ArrayMap> {
  using Value = BlockArray;
  template <typename E>
  static BlockArray Tanh(const Eigen::ArrayBase<E>& x) {
    return x.tanh();
  }
  template <typename E>
  static BlockArray Sigmoid(const Eigen::ArrayBase<E>& x) {
    return x.logistic();
  }
  template <typename E>
  static BlockArray Sqrt(const Eigen::ArrayBase<E>& x) {
    return x.sqrt();
  }
  static auto Constant(float value, const ArrayMap& like) {
    return Eigen::ArrayXf::Constant(like.size(), value);
  }
};

void CpuCompute::DoMap(const MapCall& call) {
  std::visit(
      [&](const auto& op) {
        using Op = std::decay_t<decltype(op)>;
        threads_.ParallelFor(call.numel, WorkPerElement<Op>(),
                             [&](int64_t begin, int64_t end) { RunBlocks(op, call, begin, end); });
      },
      call.op);
}

}  // namespace trident
