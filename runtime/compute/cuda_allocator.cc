#include "runtime/compute/cuda_allocator.h"

#include <algorithm>

#include "runtime/compute/cuda_check.h"

namespace trident {
namespace {

int64_t Rounded(int64_t bytes) {
  const int64_t r = CudaAllocator::kRoundingBytes;
  return (bytes + r - 1) / r * r;
}

}  // namespace

CudaAllocator::~CudaAllocator() {
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  ReleaseIdle();
}

void CudaAllocator::ReleaseIdle() {
  for (auto& [size, blocks] : idle_) {
    for (void* block : blocks) TRIDENT_CUDA_CHECK(cudaFree(block));
    reserved_bytes_ -= size * static_cast<int64_t>(blocks.size());
  }
  idle_.clear();
}

void* CudaAllocator::Reserve(int64_t rounded) {
  auto idle = idle_.find(rounded);
  if (idle != idle_.end() && !idle->second.empty()) {
    void* data = idle->second.back();
    idle->second.pop_back();
    return data;
  }
  void* data = nullptr;
  cudaError_t error = cudaMalloc(&data, static_cast<size_t>(rounded));
  if (error == cudaErrorMemoryAllocation && !idle_.empty()) {
    (void)cudaGetLastError();  // clear the sticky-free error before retrying
    TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ReleaseIdle();
    error = cudaMalloc(&data, static_cast<size_t>(rounded));
  }
  TRIDENT_CHECK(error == cudaSuccess)
      << "out of device memory: " << rounded << " bytes requested with " << stats_.current_bytes
      << " held (peak " << stats_.peak_bytes << ", " << reserved_bytes_
      << " reserved): " << cudaGetErrorString(error)
      << "; HINT: a smaller micro-batch, recompute, or more pipeline stages";
  reserved_bytes_ += rounded;
  return data;
}

void* CudaAllocator::Allocate(int64_t bytes) {
  TRIDENT_CHECK(bytes >= 0) << "CudaAllocator: " << bytes << " bytes requested";
  if (bytes == 0) return nullptr;
  const int64_t rounded = Rounded(bytes);
  void* data = Reserve(rounded);
  TRIDENT_CUDA_CHECK(cudaMemsetAsync(data, 0, static_cast<size_t>(rounded), stream_));
  stats_.current_bytes += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
  return data;
}

void CudaAllocator::Free(void* data, int64_t bytes) {
  if (data == nullptr) return;
  TRIDENT_CHECK(bytes > 0 && bytes <= stats_.current_bytes)
      << "CudaAllocator: freeing " << bytes << " bytes with " << stats_.current_bytes << " held";
  stats_.current_bytes -= bytes;
  idle_[Rounded(bytes)].push_back(data);
}

}  // namespace trident
