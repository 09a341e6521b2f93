// Eigen views of CpuCompute's fp32 tensors, mapped on their buffers (no copies).
// Internal to runtime/compute.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "runtime/compute/tensor.h"

namespace trident {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using MatrixMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;

// Elements [begin, end) of a tensor, flat.
inline ConstArrayMap Elements(const Tensor& t, int64_t begin, int64_t end) {
  return ConstArrayMap(t.data<float>() + begin, end - begin);
}
inline ArrayMap Elements(Tensor& t, int64_t begin, int64_t end) {
  return ArrayMap(t.data<float>() + begin, end - begin);
}

// Columns [begin, end) of row n of a tensor seen as [N, cols].
inline ConstArrayMap RowSegment(const Tensor& t, int64_t cols, int64_t n, int64_t begin,
                                int64_t end) {
  return Elements(t, n * cols + begin, n * cols + end);
}
inline ArrayMap RowSegment(Tensor& t, int64_t cols, int64_t n, int64_t begin, int64_t end) {
  return Elements(t, n * cols + begin, n * cols + end);
}

// Row n of a tensor seen as [N, cols].
inline ConstArrayMap Row(const Tensor& t, int64_t cols, int64_t n) {
  return RowSegment(t, cols, n, 0, cols);
}
inline ArrayMap Row(Tensor& t, int64_t cols, int64_t n) { return RowSegment(t, cols, n, 0, cols); }

}  // namespace trident
