// CpuCompute: the reference backend — fp32 (and int32 ids) in host memory, with Eigen mapped
// on the tensors' own buffers (no copies). bf16 tensors are stored (2 bytes an element, the
// upper half of the fp32 pattern) and cast to and from fp32 rounding to nearest even; every
// other op on them is widened by Compute (fp32 stand-ins, each output rounded once), so a bf16
// op gives what a bf16 GPU kernel computing in fp32 does.
//
// Threads: `threads` per backend (default 1, one per rank, as the profiler measures). They are
// this object's own (see cpu_threads.h); Eigen's process-wide setNbThreads is not used. Each
// op's result is complete on return; Synchronize does nothing.
// Results: elementwise, row and column ops give the same bits for every thread count. GEMMs
// split across threads may differ in the last bits from a one-thread run, because Eigen picks
// its blocking from the size of each thread's part.
// Memory: tensors come from a TrackingAllocator (64-byte aligned, counted); Eigen's own GEMM
// packing buffers and the fp32 stand-ins of widened bf16 ops are workspace outside those
// counts (a bf16 device would hold neither). Every tensor must be destroyed before
// its backend (checked: the destructor aborts while tensors are alive).
#pragma once

#include <string>

#include "core/status.h"
#include "runtime/compute/compute.h"
#include "runtime/compute/cpu_threads.h"
#include "runtime/compute/tracking_allocator.h"

namespace trident {

struct CpuComputeOptions {
  int threads = 1;

  // Ok, or what is wrong with the options and how to fix it.
  Status Validate() const;
};

class CpuCompute final : public Compute {
 public:
  // REQUIRES: options.Validate() is ok.
  explicit CpuCompute(CpuComputeOptions options = {});
  ~CpuCompute() override;

  int threads() const { return threads_.count(); }
  // "cpu (2 threads)".
  std::string Describe() const override;

  bool Supports(ElementType type) const override;
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void ResetPeak() override { allocator_.ResetPeak(); }
  void Synchronize() override {}

 protected:
  bool ComputesOn(ElementType type) const override;
  void* DoAllocate(int64_t bytes) override;
  void DoFree(void* data, int64_t bytes) override;
  void* DoAllocateWorkspace(int64_t bytes) override;
  void DoFreeWorkspace(void* data, int64_t bytes) override;
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
  TrackingAllocator allocator_;
  CpuThreads threads_;
};

}  // namespace trident
