// CpuCompute's softmax over the last dimension, optionally causal, and its backward; rows
// split across threads. In a causal [.., R, C] tensor, flat row n is row i = n mod R of its
// score matrix and keeps columns 0..i + offset.
#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"
#include "runtime/compute/op_check.h"

namespace trident {

void CpuCompute::DoSoftmax(const Tensor& x, const SoftmaxMask& mask, Tensor& y) {
  const int64_t cols = MatrixCols(x);
  if (cols == 0) return;
  const int64_t matrix_rows = mask.causal ? x.dim(-2) : 1;
  threads_.ParallelFor(MatrixRows(x), cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const int64_t kept = mask.causal ? n % matrix_rows + mask.offset + 1 : cols;
      const ConstArrayMap x_row = RowSegment(x, cols, n, 0, kept);
      ArrayMap y_row = Row(y, cols, n);
      const float max = x_row.maxCoeff();
      y_row.head(kept) = (x_row - max).exp();
      y_row.head(kept) *= 1.0f / y_row.head(kept).sum();
      y_row.tail(cols - kept).setZero();
    }
  });
}

// dx = y ⊙ (dy − Σ_j dy_j·y_j) per row (the Jacobian of softmax is diag(y) − y·yᵀ).
void CpuCompute::DoSoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  const int64_t cols = MatrixCols(y);
  if (cols == 0) return;
  threads_.ParallelFor(MatrixRows(y), cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const ConstArrayMap y_row = Row(y, cols, n);
      const float dot = (Row(dy, cols, n) * y_row).sum();
      Row(dx, cols, n) = y_row * (Row(dy, cols, n) - dot);
    }
  });
}

}  // namespace trident
