// CpuCompute's bias ops. Adding a bias splits the rows across threads; bias gradients split
// the columns, so each column sums its rows in order on one thread (the same bits for every
// thread count).
#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"

namespace trident {

void CpuCompute::DoAddBias(const Tensor& bias_C, Tensor& y_NC) {
  const int64_t cols = bias_C.numel();
  if (cols == 0) return;
  const ConstArrayMap bias = Elements(bias_C, 0, cols);
  threads_.ParallelFor(y_NC.numel() / cols, cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) Row(y_NC, cols, n) += bias;
  });
}

void CpuCompute::DoBiasGrad(const Tensor& dy_NC, Tensor& dbias_C) {
  const int64_t cols = dbias_C.numel();
  if (cols == 0) return;
  const int64_t rows = dy_NC.numel() / cols;
  threads_.ParallelFor(cols, rows, [&](int64_t begin, int64_t end) {
    ArrayMap dbias = Elements(dbias_C, begin, end);
    for (int64_t n = 0; n < rows; ++n) dbias += RowSegment(dy_NC, cols, n, begin, end);
  });
}

}  // namespace trident
