// CudaCompute's embedding gather and scatter-add, and the cross-entropy loss (fp32 or bf16
// tensors; ids, targets int32; the loss fp32). Ids and targets are not range-checked here.
//
// Embedding: one block per row of out, threads over columns. EmbeddingBackward: one thread per
// column, looping over the N rows in token order, so repeated ids add up without atomics and
// with the same bits every run.
//
// Cross-entropy per row, with m = max_j x_j and Z = Σ_j e^(x_j − m), one block per row:
//   probs = e^(x − m) / Z,  loss_n = log Z − (x_t − m)  (= −log probs_t, without underflow),
//   loss = Σ_n loss_n / N, summed in double by one block in a fixed order;
//   ∂loss/∂x = dloss · (probs − onehot(t)) / N.
#include "runtime/compute/cuda_kernels.cuh"
#include "runtime/compute/op_check.h"

namespace trident {
namespace {

using cuda_kernels::BlockMax;
using cuda_kernels::BlockSum;
using cuda_kernels::DispatchFloat;
using cuda_kernels::GridFor;
using cuda_kernels::kRowThreads;
using cuda_kernels::kThreads;
using cuda_kernels::Load;
using cuda_kernels::Ptr;
using cuda_kernels::RowGrid;
using cuda_kernels::Store;

template <typename T>
__global__ void EmbeddingKernel(const int32_t* __restrict__ ids_N, const T* __restrict__ table_VC,
                                T* __restrict__ out_NC, int64_t rows, int64_t cols) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* table_row = table_VC + static_cast<int64_t>(ids_N[n]) * cols;
    T* out_row = out_NC + n * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out_row[c] = table_row[c];
  }
}

// Thread c owns column c of dtable and walks the rows in order: race-free and deterministic.
template <typename T>
__global__ void EmbeddingBackwardKernel(const int32_t* __restrict__ ids_N,
                                        const T* __restrict__ dout_NC, T* dtable_VC, int64_t rows,
                                        int64_t cols) {
  for (int64_t c = cuda_kernels::FlatIndex(); c < cols; c += cuda_kernels::FlatStride()) {
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t i = static_cast<int64_t>(ids_N[n]) * cols + c;
      Store(dtable_VC, i, Load(dtable_VC, i) + Load(dout_NC, n * cols + c));
    }
  }
}

// Softmax of each row into probs (which may alias logits: every read of a row precedes the
// block barrier inside BlockSum, and each thread rewrites only the elements it read) and the
// row's loss log Z − (x_t − m) into row_loss_N (log Z in double, as the CPU backend).
template <typename T>
__global__ void CrossEntropyKernel(const T* logits_NV, const int32_t* __restrict__ targets_N,
                                   T* probs_NV, float* __restrict__ row_loss_N, int64_t rows,
                                   int64_t vocab) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* x = logits_NV + n * vocab;
    T* p = probs_NV + n * vocab;
    float local_max = -INFINITY;
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
      local_max = fmaxf(local_max, Load(x, j));
    }
    const float max = BlockMax(local_max);
    float local_sum = 0.0f;
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) local_sum += expf(Load(x, j) - max);
    const float x_target = threadIdx.x == 0 ? Load(x, targets_N[n]) : 0.0f;
    const float z = BlockSum(local_sum);
    const float inv_z = 1.0f / z;
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
      Store(p, j, expf(Load(x, j) - max) * inv_z);
    }
    if (threadIdx.x == 0) {
      row_loss_N[n] = static_cast<float>(log(static_cast<double>(z)) - (x_target - max));
    }
  }
}

// loss_1[0] = Σ_n row_loss_N[n] / rows, in double, in a fixed order. One block of kRowThreads.
__global__ void MeanLossKernel(const float* __restrict__ row_loss_N, int64_t rows,
                               float* __restrict__ loss_1) {
  __shared__ double partial[kRowThreads];
  double sum = 0.0;
  for (int64_t n = threadIdx.x; n < rows; n += blockDim.x) sum += row_loss_N[n];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kRowThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss_1[0] = static_cast<float>(partial[0] / static_cast<double>(rows));
}

// dlogits = probs · scale − (j == t ? scale : 0), scale = dloss / N. dlogits may alias probs.
template <typename T>
__global__ void CrossEntropyBackwardKernel(const T* probs_NV, const int32_t* __restrict__ targets_N,
                                           float scale, T* dlogits_NV, int64_t rows,
                                           int64_t vocab) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const int64_t target = targets_N[n];
    const T* p = probs_NV + n * vocab;
    T* d = dlogits_NV + n * vocab;
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
      const float g = Load(p, j) * scale;
      Store(d, j, j == target ? g - scale : g);
    }
  }
}

}  // namespace

void CudaCompute::DoEmbedding(const Tensor& ids_N, const Tensor& table_VC, Tensor& out_NC) {
  const int64_t rows = ids_N.numel();
  const int64_t cols = MatrixCols(table_VC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(out_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    EmbeddingKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<int32_t>(ids_N), Ptr<T>(table_VC), Ptr<T>(out_NC), rows, cols);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoEmbeddingBackward(const Tensor& ids_N, const Tensor& dout_NC,
                                      Tensor& dtable_VC) {
  const int64_t rows = ids_N.numel();
  const int64_t cols = MatrixCols(dtable_VC);
  if (rows == 0 || cols == 0) return;
  DispatchFloat(dtable_VC.type(), [&](auto tag) {
    using T = decltype(tag);
    EmbeddingBackwardKernel<T><<<GridFor(cols), kThreads, 0, stream()>>>(
        Ptr<int32_t>(ids_N), Ptr<T>(dout_NC), Ptr<T>(dtable_VC), rows, cols);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoCrossEntropy(const Tensor& logits_NV, const Tensor& targets_N, Tensor& probs_NV,
                                 Tensor& loss_1) {
  const int64_t rows = MatrixRows(logits_NV);
  const int64_t vocab = MatrixCols(logits_NV);
  Tensor row_loss_N = Allocate({rows});
  DispatchFloat(probs_NV.type(), [&](auto tag) {
    using T = decltype(tag);
    CrossEntropyKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(logits_NV), Ptr<int32_t>(targets_N), Ptr<T>(probs_NV), Ptr<float>(row_loss_N), rows,
        vocab);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
  MeanLossKernel<<<1, kRowThreads, 0, stream()>>>(Ptr<float>(row_loss_N), rows, Ptr<float>(loss_1));
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoCrossEntropyBackward(const Tensor& probs_NV, const Tensor& targets_N,
                                         float dloss, Tensor& dlogits_NV) {
  const int64_t rows = MatrixRows(probs_NV);
  const int64_t vocab = MatrixCols(probs_NV);
  if (rows == 0 || vocab == 0) return;
  const float scale = dloss / static_cast<float>(rows);
  DispatchFloat(dlogits_NV.type(), [&](auto tag) {
    using T = decltype(tag);
    CrossEntropyBackwardKernel<T><<<RowGrid(rows), kRowThreads, 0, stream()>>>(
        Ptr<T>(probs_NV), Ptr<int32_t>(targets_N), scale, Ptr<T>(dlogits_NV), rows, vocab);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace trident
