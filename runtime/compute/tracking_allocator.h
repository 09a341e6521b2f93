// TrackingAllocator: host memory for CpuCompute's tensors, counted.
//
// Blocks are 64-byte aligned (a cache line, and the widest SIMD load) and zero-filled. The
// allocator counts the bytes requested by live blocks (alignment padding is not counted, so
// the figures match the tensor sizes the memory model predicts) and their peak. The profiler
// and the memory-fidelity checks read these figures.
//
// Freed blocks are kept, by padded size, and handed out again (zero-filled) instead of going
// back to the C library, as GPU caching allocators do: glibc returns large blocks to the system
// (mmap, trim) and each reuse would fault their pages back in, which made a training step of a
// small model up to twice as slow as its layers' profile. Idle blocks are bounded by the peak
// of live bytes (never more idle memory than the job has used at once) and released by the
// destructor; they are not counted in the figures.
// Thread-safety: none; one thread at a time (the owning backend's).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "runtime/compute/compute.h"

namespace trident {

class TrackingAllocator {
 public:
  static constexpr int64_t kAlignmentBytes = 64;

  TrackingAllocator() = default;
  ~TrackingAllocator();
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
  void ReleaseIdle();

  MemoryStats stats_;
  int64_t live_padded_bytes_ = 0;
  int64_t high_water_bytes_ = 0;  // the most live padded bytes ever (ResetPeak does not lower it)
  std::unordered_map<int64_t, std::vector<void*>> idle_;  // by padded size
  int64_t idle_bytes_ = 0;
};

}  // namespace trident
