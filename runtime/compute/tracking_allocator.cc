#include "runtime/compute/tracking_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "core/check.h"

namespace trident {

namespace {

// Sizes are kept in multiples of the alignment (the idle blocks are found by padded size).
int64_t Padded(int64_t bytes) {
  const int64_t a = TrackingAllocator::kAlignmentBytes;
  return (bytes + a - 1) / a * a;
}

// A block fresh from the C library: 64-byte aligned, or, from 2 MiB, 2 MiB aligned with its whole
// huge pages advised as such (see the header). Null when the system has no memory left.
void* Fresh(int64_t padded) {
  const int64_t huge = TrackingAllocator::kHugePageBytes;
  const bool large = padded >= huge;
  void* data = nullptr;
  if (posix_memalign(&data, static_cast<size_t>(large ? huge : TrackingAllocator::kAlignmentBytes),
                     static_cast<size_t>(padded)) != 0) {
    return nullptr;
  }
  // Advice only: a kernel without transparent huge pages keeps 4 KiB pages.
  if (large) (void)madvise(data, static_cast<size_t>(padded / huge * huge), MADV_HUGEPAGE);
  return data;
}

}  // namespace

TrackingAllocator::~TrackingAllocator() { ReleaseIdle(); }

void TrackingAllocator::ReleaseIdle() {
  for (auto& [size, blocks] : idle_) {
    for (void* block : blocks) std::free(block);
  }
  idle_.clear();
  idle_bytes_ = 0;
}

void* TrackingAllocator::Allocate(int64_t bytes) {
  TRIDENT_CHECK(bytes >= 0) << "TrackingAllocator: " << bytes << " bytes requested";
  if (bytes == 0) return nullptr;
  const int64_t padded = Padded(bytes);
  void* data = nullptr;
  auto idle = idle_.find(padded);
  if (idle != idle_.end() && !idle->second.empty()) {
    data = idle->second.back();
    idle->second.pop_back();
    idle_bytes_ -= padded;
  } else {
    data = Fresh(padded);
    if (data == nullptr && idle_bytes_ > 0) {
      ReleaseIdle();
      data = Fresh(padded);
    }
  }
  TRIDENT_CHECK(data != nullptr)
      << "out of host memory: " << bytes << " bytes requested with " << stats_.current_bytes
      << " held (peak " << stats_.peak_bytes
      << "); HINT: a smaller micro-batch, recompute, or more pipeline stages";
  std::memset(data, 0, static_cast<size_t>(padded));
  stats_.current_bytes += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
  live_padded_bytes_ += padded;
  high_water_bytes_ = std::max(high_water_bytes_, live_padded_bytes_);
  return data;
}

void TrackingAllocator::Free(void* data, int64_t bytes) {
  if (data == nullptr) return;
  TRIDENT_CHECK(bytes > 0 && bytes <= stats_.current_bytes)
      << "TrackingAllocator: freeing " << bytes << " bytes with " << stats_.current_bytes
      << " held";
  stats_.current_bytes -= bytes;
  const int64_t padded = Padded(bytes);
  live_padded_bytes_ -= padded;
  if (idle_bytes_ + padded > high_water_bytes_) {
    std::free(data);
    return;
  }
  idle_[padded].push_back(data);
  idle_bytes_ += padded;
}

}  // namespace trident
