// Checking wrappers for CUDA runtime and cuBLAS calls made by CudaCompute.
//
//   TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
//   TRIDENT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(...));
//   Kernel<<<blocks, threads, 0, stream_>>>(...); TRIDENT_CUDA_CHECK(cudaGetLastError());
//
// A failed call inside a compute op is a broken step (an op's arguments have passed the
// interface's checks, so what is left is the device or the driver): it aborts through
// TRIDENT_CHECK, printing the call, file:line and CUDA's own error name and text. Errors a
// user can cause (no device) are found earlier, by CudaCompute::Create, and returned as a
// Status. Internal to runtime/compute; included only when built with CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/check.h"

#define TRIDENT_CUDA_CHECK(call)                                          \
  do {                                                                    \
    const cudaError_t trident_cuda_error_ = (call);                       \
    TRIDENT_CHECK(trident_cuda_error_ == cudaSuccess)                     \
        << #call << ": " << cudaGetErrorName(trident_cuda_error_) << ": " \
        << cudaGetErrorString(trident_cuda_error_);                       \
  } while (false)

#define TRIDENT_CUBLAS_CHECK(call)                                              \
  do {                                                                          \
    const cublasStatus_t trident_cublas_status_ = (call);                       \
    TRIDENT_CHECK(trident_cublas_status_ == CUBLAS_STATUS_SUCCESS)              \
        << #call << ": " << cublasGetStatusName(trident_cublas_status_) << ": " \
        << cublasGetStatusString(trident_cublas_status_);                       \
  } while (false)
