// CudaAllocator: device memory for CudaCompute's tensors, cached and counted.
//
// Blocks are rounded up to 512 bytes and come from cudaMalloc. A freed block is kept, by
// rounded size, and handed out again instead of going back to the driver: cudaMalloc and
// cudaFree synchronize the device, which would serialize every step. Blocks are zero-filled
// on the compute stream (cudaMemsetAsync), so a block reused there is ordered after the ops
// that used it before. Blocks are not tracked per stream: a block used on another stream (a
// communication stream) must have its use completed on the host (Comm::Wait or Test) before
// its tensor is freed, as the runtime does. When cudaMalloc fails the idle blocks are released
// (cudaFree, which waits for the whole device) and it is tried once more; after that the
// allocator aborts, naming the bytes requested and held.
//
// The figures count the bytes requested by live blocks (not the rounding, not idle blocks),
// so they match the tensor sizes the memory model predicts, as TrackingAllocator's do.
// Thread-safety: none; one thread at a time (the owning backend's). Internal to
// runtime/compute; included only when built with CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "runtime/compute/compute.h"

namespace trident {

class CudaAllocator {
 public:
  static constexpr int64_t kRoundingBytes = 512;

  // Zero-fills on `stream`. REQUIRES: the current device is the one blocks are made on.
  explicit CudaAllocator(cudaStream_t stream) : stream_(stream) {}
  // Frees the idle blocks (after the stream has finished with them).
  ~CudaAllocator();
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  // A zero-filled block of `bytes` (filled in stream order); null for 0 bytes.
  // REQUIRES: bytes >= 0.
  void* Allocate(int64_t bytes);
  // REQUIRES: `data` came from Allocate(bytes) on this allocator and is not yet freed.
  void Free(void* data, int64_t bytes);

  MemoryStats stats() const { return stats_; }
  void ResetPeak() { stats_.peak_bytes = stats_.current_bytes; }
  // Bytes held from the driver: live and idle blocks, rounded.
  int64_t reserved_bytes() const { return reserved_bytes_; }

 private:
  void* Reserve(int64_t rounded);
  void ReleaseIdle();

  cudaStream_t stream_;
  MemoryStats stats_;
  int64_t reserved_bytes_ = 0;
  std::unordered_map<int64_t, std::vector<void*>> idle_;  // by rounded size
};

}  // namespace trident
