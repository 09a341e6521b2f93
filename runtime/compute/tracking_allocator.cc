#include "runtime/compute/tracking_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace trident {

namespace {

// std::aligned_alloc wants a size that is a multiple of the alignment.
int64_t Padded(int64_t bytes) {
  const int64_t a = TrackingAllocator::kAlignmentBytes;
  return (bytes + a - 1) / a * a;
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
    data = std::aligned_alloc(kAlignmentBytes, static_cast<size_t>(padded));
    if (data == nullptr && idle_bytes_ > 0) {
      ReleaseIdle();
      data = std::aligned_alloc(kAlignmentBytes, static_cast<size_t>(padded));
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
