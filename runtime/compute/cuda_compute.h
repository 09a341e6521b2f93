// CudaCompute: the GPU backend — fp32 and bf16 tensors (int32 for ids) in device memory,
// cuBLAS for the matrix products and kernels of our own for everything else.
//
//   TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<CudaCompute> gpu, CudaCompute::Create({.device = 0}));
//
// Streams: every op runs on one compute stream, in the order issued, and returns as soon as it
// is queued. CopyToHost and Synchronize wait for the stream; CopyFromHost copies synchronously
// (the host buffer may be gone once it returns). A communication backend orders its transfers
// after the compute stream's work with events on its own streams (device_stream()).
// Precision: bf16 tensors are read into fp32, computed in fp32 and rounded once when stored;
// GEMMs accumulate in fp32 (CUBLAS_COMPUTE_32F; TF32 tensor cores are not used for fp32, so
// fp32 products match the CPU's to rounding). Reductions (norms, softmax, loss, bias and
// embedding gradients) accumulate in fp32 in a fixed order, without atomics, so a run repeats
// bit for bit; results differ from the CPU's in the last bits (fused multiply-adds, another
// summation order). A bf16 embedding gradient is rounded once per row added (an id repeated k
// times in a batch is rounded k times). Saved statistics and the loss are fp32. The trainer runs
// the optimizers on fp32 master weights; Cast makes bf16 working copies. Memory: tensors come from
// a CudaAllocator (cached, counted like TrackingAllocator). Every tensor must be destroyed before
// its backend. Errors: a failed CUDA or cuBLAS call inside an op aborts with the call and file:line
// (cuda_check.h). Thread-safety: one thread at a time; the backend makes its device current
// on that thread when created.
// Internal to runtime/compute; elsewhere use MakeCompute (compute_factory.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/compute/compute.h"
#include "runtime/compute/cuda_allocator.h"

namespace trident {

struct CudaComputeOptions {
  int device = 0;  // CUDA device index, 0 <= device < cudaGetDeviceCount()
};

class CudaCompute final : public Compute {
 public:
  // FailedPrecondition when the machine has no usable CUDA device (no driver, no GPU, or
  // `device` out of range), naming CUDA's error and the devices there are.
  static StatusOr<std::unique_ptr<CudaCompute>> Create(CudaComputeOptions options = {});
  ~CudaCompute() override;

  // "cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB)".
  std::string Describe() const override;
  int device() const { return device_; }

  bool Supports(ElementType type) const override;
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void ResetPeak() override { allocator_.ResetPeak(); }
  void Synchronize() override;
  void* device_stream() const override { return stream(); }
  // Marks are CUDA events recorded on the compute stream (kept for reuse after ClearMarks).
  int RecordMark() override;
  double MarkElapsedMs(int from, int to) const override;
  void ClearMarks() override { marks_used_ = 0; }

 protected:
  bool TakesMixedGemm() const override { return true; }
  void* DoAllocate(int64_t bytes) override;
  void DoFree(void* data, int64_t bytes) override;
  void DoCopyFromHost(const void* host, Tensor& dst) override;
  void DoCopyToHost(const Tensor& src, void* host) override;
  void DoCast(const Tensor& src, Tensor& dst) override;
  void DoMap(const MapCall& call) override;
  void DoGemmStridedBatched(const BatchedGemm& gemm, const Tensor& a, const Tensor& b,
                            Tensor& c) override;
  void DoAddBias(const Tensor& bias_C, Tensor& y_NC) override;
  void DoBiasGrad(const Tensor& dy_NC, Tensor& dbias_C) override;
  void DoSoftmax(const Tensor& x, const SoftmaxMask& mask, Tensor& y) override;
  void DoSoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor& dx) override;
  void DoNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C, float eps,
              Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) override;
  void DoNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& mean_N,
                      const Tensor& rstd_N, const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C,
                      Tensor& dbeta_C) override;
  void DoEmbedding(const Tensor& ids_N, const Tensor& table_VC, Tensor& out_NC) override;
  void DoEmbeddingBackward(const Tensor& ids_N, const Tensor& dout_NC, Tensor& dtable_VC) override;
  void DoCrossEntropy(const Tensor& logits_NV, const Tensor& targets_N, Tensor& probs_NV,
                      Tensor& loss_1) override;
  void DoCrossEntropyBackward(const Tensor& probs_NV, const Tensor& targets_N, float dloss,
                              Tensor& dlogits_NV) override;

 private:
  struct StreamDeleter {
    void operator()(cudaStream_t stream) const;
  };
  struct CublasDeleter {
    void operator()(cublasHandle_t cublas) const;
  };
  using StreamPtr = std::unique_ptr<CUstream_st, StreamDeleter>;
  using CublasPtr = std::unique_ptr<cublasContext, CublasDeleter>;

  CudaCompute(int device, const cudaDeviceProp& properties, StreamPtr stream, CublasPtr cublas);
  cudaStream_t stream() const { return stream_.get(); }

  int device_;
  cudaDeviceProp properties_;
  // Declared before the allocator, so they outlive it: its destructor waits on the stream.
  StreamPtr stream_;
  CublasPtr cublas_;
  CudaAllocator allocator_;
  std::vector<cudaEvent_t> marks_;  // created on first use, destroyed with the backend
  size_t marks_used_ = 0;
};

}  // namespace trident
