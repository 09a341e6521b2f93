// CudaCompute's matrix products: one cublasGemmStridedBatchedEx_64 call per batch.
//
// cuBLAS is column-major; our matrices are row-major. A row-major matrix X with leading
// dimension ld is, read column-major, Xᵀ with the same ld. So C = op(A)·op(B) is computed as
// Cᵀ = op(B)ᵀ·op(A)ᵀ: B is passed first with its own transpose flag, then A, with m = N
// columns of C and n = M rows. Example: C[2, 3] = A[2, 4]·B[4, 3] is cuBLAS's
// m = 3, n = 2, k = 4 with (B, ldb = 3, N) and (A, lda = 4, N), ldc = 3.
// Element types: fp32 or bf16 operands, all three the same or bf16 A and B with an fp32 C
// (mixed precision's weight gradients); fp32 accumulation and scalars.
#include <algorithm>

#include "runtime/compute/cuda_check.h"
#include "runtime/compute/cuda_compute.h"

namespace trident {
namespace {

cudaDataType_t CudaType(ElementType type) {
  TRIDENT_CHECK(type == ElementType::kFp32 || type == ElementType::kBf16)
      << "CudaCompute: no matrix products of " << ElementTypeName(type) << " tensors";
  return type == ElementType::kFp32 ? CUDA_R_32F : CUDA_R_16BF;
}

// The first element of matrix 0 of `layout` in t.
const void* MatrixBase(const Tensor& t, const MatrixLayout& layout) {
  return static_cast<const char*>(t.raw_data()) + layout.offset * ElementBytes(t.type());
}

}  // namespace

void CudaCompute::DoGemmStridedBatched(const BatchedGemm& gemm, const Tensor& a, const Tensor& b,
                                       Tensor& c) {
  const int64_t m = gemm.c.rows;
  const int64_t n = gemm.c.cols;
  const int64_t k = gemm.trans_a ? gemm.a.rows : gemm.a.cols;
  if (m == 0 || n == 0) return;
  const cudaDataType_t ab_type = CudaType(a.type());
  const cudaDataType_t c_type = CudaType(c.type());
  const auto op = [](bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; };
  const auto ld = [](const MatrixLayout& layout) { return std::max<int64_t>(layout.ld, 1); };
  void* c_base = static_cast<char*>(c.raw_data()) + gemm.c.offset * ElementBytes(c.type());
  TRIDENT_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
      cublas_.get(), op(gemm.trans_b), op(gemm.trans_a), n, m, k, &gemm.alpha,
      MatrixBase(b, gemm.b), ab_type, ld(gemm.b), gemm.b.stride, MatrixBase(a, gemm.a), ab_type,
      ld(gemm.a), gemm.a.stride, &gemm.beta, c_base, c_type, ld(gemm.c), gemm.c.stride, gemm.batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace trident
