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
//
// Blocks of 2 MiB and more are 2 MiB aligned and advised as transparent huge pages
// (madvise(MADV_HUGEPAGE), which counts where the kernel's THP mode is "madvise", Debian's
// default), as PyTorch's CPU allocator does when THP_MEM_ALLOC_ENABLE is set: a 2 MiB page
// holds what 512 small ones do, so the first touch of a fresh block faults 512 times less and
// the TLB covers a whole embedding table. On gpt2-small the embedding's forward (random rows of
// a 147 MiB table) measured 0.71 ms against 0.83–1.0 ms, and of two profiles' embedding and
// final-norm medians 11 of 12 agreed within 5% (the 12th 8%), against 8 of 12 (up to 20%).
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
  static constexpr int64_t kHugePageBytes = int64_t{2} << 20;

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
