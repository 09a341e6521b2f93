// What CudaCompute's kernel files (cuda_*.cu) share: element access in fp32 for fp32 and bf16
// tensors, launch sizes, a dispatch over the float element types, and block reductions.
//
//   DispatchFloat(out.type(), [&](auto tag) {
//     using T = decltype(tag);
//     AddKernel<T><<<GridFor(n), kThreads, 0, stream()>>>(Ptr<T>(a), Ptr<T>(b), Ptr<T>(out), n);
//   });
//   TRIDENT_CUDA_CHECK(cudaGetLastError());
//
// Every kernel reads elements with Load (bf16 widened to fp32), computes in fp32 and writes
// with Store (rounded to nearest even once). Flat kernels use grid-stride loops, so any
// element count fits one launch. Internal to runtime/compute; CUDA sources only.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "core/check.h"
#include "runtime/compute/cuda_check.h"
#include "runtime/compute/cuda_compute.h"

namespace trident::cuda_kernels {

using Bf16 = __nv_bfloat16;

constexpr int kThreads = 256;     // threads of a flat (elementwise) launch
constexpr int kRowThreads = 256;  // threads of a row launch (one block per row)
constexpr int kWarp = 32;

constexpr int64_t kMaxBlocks = int64_t{65535} * 16;

// Blocks for a grid-stride launch over n elements (at least 1, at most kMaxBlocks).
inline unsigned GridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// Blocks for a row launch: one per row up to kMaxBlocks (at least 1); past that the blocks
// loop over rows with a stride of gridDim.x.
inline unsigned RowGrid(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > kMaxBlocks ? kMaxBlocks : rows));
}

// The tensor's device pointer as T (float, Bf16 or int32_t); no type check: the interface
// has checked the element types before the Do* method runs.
template <typename T>
T* Ptr(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}
template <typename T>
const T* Ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

// Calls fn(float{}) for fp32 tensors and fn(Bf16{}) for bf16 ones.
template <typename Fn>
void DispatchFloat(ElementType type, Fn&& fn) {
  if (type == ElementType::kFp32) {
    fn(float{});
  } else {
    TRIDENT_CHECK(type == ElementType::kBf16)
        << "CudaCompute: no kernels for " << ElementTypeName(type) << " tensors";
    fn(Bf16{});
  }
}

__device__ __forceinline__ float Load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float Load(const Bf16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void Store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void Store(Bf16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

// Index of this thread in a grid-stride loop, and the stride.
__device__ __forceinline__ int64_t FlatIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t FlatStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// The sum (or max) of `v` over the block, returned to every thread. REQUIRES: every thread of
// the block calls it; blockDim.x is a multiple of 32 and at most 1024.
__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  v = WarpSum(v);
  __syncthreads();  // `partial` may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  v = lane < warps ? partial[lane] : 0.0f;
  return WarpSum(v);
}

__device__ __forceinline__ float BlockMax(float v) {
  __shared__ float partial[kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  v = lane < warps ? partial[lane] : -INFINITY;
  return WarpMax(v);
}

}  // namespace trident::cuda_kernels
