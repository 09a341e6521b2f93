// CpuCompute: construction, memory, copies and fills.
#include "runtime/compute/cpu_compute.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <new>

#include "core/check.h"
#include "runtime/compute/cpu_eigen.h"

namespace trident {

Status CpuComputeOptions::Validate() const {
  if (threads < 1) {
    return InvalidArgument("cpu compute: threads must be at least 1, got " +
                           std::to_string(threads) + "; HINT: use 1 thread per rank");
  }
  return Status::Ok();
}

CpuCompute::CpuCompute(CpuComputeOptions options) : threads_(options.threads) {
  const Status status = options.Validate();
  TRIDENT_CHECK(status.ok()) << status.message();
}

CpuCompute::~CpuCompute() {
  TRIDENT_CHECK(allocator_.stats().current_bytes == 0)
      << "CpuCompute destroyed while " << allocator_.stats().current_bytes
      << " bytes of its tensors are alive; HINT: tensors must be destroyed before their backend";
}

std::string CpuCompute::Describe() const {
  return "cpu (" + std::to_string(threads()) + (threads() == 1 ? " thread)" : " threads)");
}

bool CpuCompute::Supports(ElementType type) const {
  return type == ElementType::kFp32 || type == ElementType::kBf16 || type == ElementType::kInt32;
}

bool CpuCompute::ComputesOn(ElementType type) const {
  return type == ElementType::kFp32 || type == ElementType::kInt32;
}

void* CpuCompute::DoAllocate(int64_t bytes) { return allocator_.Allocate(bytes); }

void CpuCompute::DoFree(void* data, int64_t bytes) { allocator_.Free(data, bytes); }

void* CpuCompute::DoAllocateWorkspace(int64_t bytes) {
  return bytes == 0 ? nullptr : ::operator new (static_cast<size_t>(bytes), std::align_val_t{64});
}

void CpuCompute::DoFreeWorkspace(void* data, int64_t /*bytes*/) {
  if (data != nullptr) ::operator delete (data, std::align_val_t{64});
}

namespace {

// Host memory is the device memory: every copy is a memcpy (which wants non-null pointers,
// so empty tensors, whose data may be null, copy nothing).
void CopyBytes(void* dst, const void* src, int64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, static_cast<size_t>(bytes));
}

}  // namespace

void CpuCompute::DoCopyFromHost(const void* host, Tensor& dst) {
  CopyBytes(dst.raw_data(), host, dst.bytes());
}

void CpuCompute::DoCopyToHost(const Tensor& src, void* host) {
  CopyBytes(host, src.raw_data(), src.bytes());
}

void CpuCompute::DoCast(const Tensor& src, Tensor& dst) {
  if (src.type() == dst.type()) return CopyBytes(dst.raw_data(), src.raw_data(), src.bytes());
  const bool narrow = dst.type() == ElementType::kBf16;
  const void* from = src.raw_data();
  void* to = dst.raw_data();
  threads_.ParallelFor(src.numel(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (narrow) {
        static_cast<uint16_t*>(to)[i] = ToBf16(static_cast<const float*>(from)[i]);
      } else {
        static_cast<float*>(to)[i] = FromBf16(static_cast<const uint16_t*>(from)[i]);
      }
    }
  });
}

}  // namespace trident
