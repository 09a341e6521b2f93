// CpuCompute's matrix products: Eigen's blocked GEMM on maps of the tensors' buffers.
// One product is split across threads by rows of C (each thread multiplies its rows of
// op(A) by all of op(B)); a batch is split by batch entries.
#include <algorithm>

#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"

namespace trident {
namespace {

// Matrix i of a batch described by `layout` (see MatrixLayout).
ConstMatrixMap MatrixAt(const Tensor& t, const MatrixLayout& layout, int64_t i) {
  const float* base = t.data<float>();
  const bool empty = layout.rows == 0 || layout.cols == 0;
  return ConstMatrixMap(empty ? base : base + layout.offset + i * layout.stride, layout.rows,
                        layout.cols, Eigen::OuterStride<>(layout.ld));
}

MatrixMap MatrixAt(Tensor& t, const MatrixLayout& layout, int64_t i) {
  float* base = t.data<float>();
  const bool empty = layout.rows == 0 || layout.cols == 0;
  return MatrixMap(empty ? base : base + layout.offset + i * layout.stride, layout.rows,
                   layout.cols, Eigen::OuterStride<>(layout.ld));
}

// c = alpha · op_a · op_b + beta · c, with c overwritten (NaNs ignored) when beta == 0.
template <typename OpA, typename OpB, typename OutC>
void ScaleAndAdd(float alpha, const OpA& op_a, const OpB& op_b, float beta, OutC c) {
  if (beta == 0.0f) {
    c.setZero();
  } else if (beta != 1.0f) {
    c *= beta;
  }
  if (op_a.cols() > 0) c.noalias() += alpha * op_a * op_b;
}

// Rows [r0, r1) of C_i = alpha · op(A_i) · op(B_i) + beta · C_i.
void GemmRows(const BatchedGemm& gemm, const ConstMatrixMap& a, const ConstMatrixMap& b,
              MatrixMap& c, int64_t r0, int64_t r1) {
  const int64_t rows = r1 - r0;
  auto c_rows = c.middleRows(r0, rows);
  if (!gemm.trans_a && !gemm.trans_b) {
    ScaleAndAdd(gemm.alpha, a.middleRows(r0, rows), b, gemm.beta, c_rows);
  } else if (!gemm.trans_a) {
    ScaleAndAdd(gemm.alpha, a.middleRows(r0, rows), b.transpose(), gemm.beta, c_rows);
  } else if (!gemm.trans_b) {
    ScaleAndAdd(gemm.alpha, a.middleCols(r0, rows).transpose(), b, gemm.beta, c_rows);
  } else {
    ScaleAndAdd(gemm.alpha, a.middleCols(r0, rows).transpose(), b.transpose(), gemm.beta, c_rows);
  }
}

}  // namespace

void CpuCompute::DoGemmStridedBatched(const BatchedGemm& gemm, const Tensor& a, const Tensor& b,
                                      Tensor& c) {
  const int64_t m = gemm.c.rows;
  const int64_t k = gemm.trans_a ? gemm.a.rows : gemm.a.cols;
  const int64_t flops_per_row = 2 * gemm.c.cols * std::max<int64_t>(k, 1);
  if (gemm.batch == 1) {
    threads_.ParallelFor(m, flops_per_row, [&](int64_t r0, int64_t r1) {
      MatrixMap c_matrix = MatrixAt(c, gemm.c, 0);
      GemmRows(gemm, MatrixAt(a, gemm.a, 0), MatrixAt(b, gemm.b, 0), c_matrix, r0, r1);
    });
    return;
  }
  threads_.ParallelFor(gemm.batch, m * flops_per_row, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      MatrixMap c_matrix = MatrixAt(c, gemm.c, i);
      GemmRows(gemm, MatrixAt(a, gemm.a, i), MatrixAt(b, gemm.b, i), c_matrix, 0, m);
    }
  });
}

}  // namespace trident
