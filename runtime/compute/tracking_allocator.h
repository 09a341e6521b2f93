// TrackingAllocator: host memory for CpuCompute's tensors, counted.
//
// Blocks are 64-byte aligned (a cache line, and the widest SIMD load) and zero-filled. The
// allocator counts the bytes requested by live blocks (alignment padding is not counted, so
// the figures match the tensor sizes the memory model predicts) and their peak. The profiler
// and the memory-fidelity checks read these figures.
// Thread-safety: none; one thread at a time (the owning backend's).
#pragma once

#include <cstdint>

#include "runtime/compute/compute.h"

namespace trident {

class TrackingAllocator {
 public:
  static constexpr int64_t kAlignmentBytes = 64;

  TrackingAllocator() = default;
  TrackingAllocator(const TrackingAllocator&) = delete;
  TrackingAllocator& operator=(const TrackingAllocator&) = delete;

  // A zero-filled block of `bytes`; null for 0 bytes. Aborts, naming the request and what is
  // held, when the system has no memory left. REQUIRES: bytes >= 0.
  void* Allocate(int64_t bytes);
  // REQUIRES: `data` came from Allocate(bytes) on this allocator and is not yet freed.
  void Free(void* data, int64_t bytes);

  MemoryStats stats() const { return stats_; }
  void ResetPeak() { stats_.peak_bytes = stats_.current_bytes; }

 private:
  MemoryStats stats_;
};

}  // namespace trident
