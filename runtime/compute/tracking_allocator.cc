#include "runtime/compute/tracking_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace trident {

void* TrackingAllocator::Allocate(int64_t bytes) {
  TRIDENT_CHECK(bytes >= 0) << "TrackingAllocator: " << bytes << " bytes requested";
  if (bytes == 0) return nullptr;
  // std::aligned_alloc wants a size that is a multiple of the alignment.
  const int64_t padded = (bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
  void* data = std::aligned_alloc(kAlignmentBytes, static_cast<size_t>(padded));
  TRIDENT_CHECK(data != nullptr)
      << "out of host memory: " << bytes << " bytes requested with " << stats_.current_bytes
      << " held (peak " << stats_.peak_bytes
      << "); HINT: a smaller micro-batch, recompute, or more pipeline stages";
  std::memset(data, 0, static_cast<size_t>(padded));
  stats_.current_bytes += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
  return data;
}

void TrackingAllocator::Free(void* data, int64_t bytes) {
  if (data == nullptr) return;
  TRIDENT_CHECK(bytes > 0 && bytes <= stats_.current_bytes)
      << "TrackingAllocator: freeing " << bytes << " bytes with " << stats_.current_bytes
      << " held";
  std::free(data);
  stats_.current_bytes -= bytes;
}

}  // namespace trident
