// CudaCompute: construction, memory, copies, completion and timing marks.
#include "runtime/compute/cuda_compute.h"

#include <algorithm>
#include <cstdio>

#include "runtime/compute/cuda_check.h"

namespace trident {
namespace {

Status NoDevice(const std::string& what, cudaError_t error) {
  return FailedPrecondition("--device cuda: " + what + ": " + cudaGetErrorName(error) + " (" +
                            cudaGetErrorString(error) +
                            "); hint: run on a machine with an NVIDIA GPU and driver, check "
                            "CUDA_VISIBLE_DEVICES and nvidia-smi, or use --device cpu");
}

}  // namespace

void CudaCompute::StreamDeleter::operator()(cudaStream_t stream) const {
  TRIDENT_CUDA_CHECK(cudaStreamDestroy(stream));
}

void CudaCompute::CublasDeleter::operator()(cublasHandle_t cublas) const {
  TRIDENT_CUBLAS_CHECK(cublasDestroy(cublas));
}

StatusOr<std::unique_ptr<CudaCompute>> CudaCompute::Create(CudaComputeOptions options) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return NoDevice("no usable CUDA device", error);
  if (options.device < 0 || options.device >= count) {
    return FailedPrecondition("--device cuda: device " + std::to_string(options.device) +
                              " requested but this machine has " + std::to_string(count) +
                              " CUDA device(s); hint: one rank per GPU (ranks per node <= " +
                              std::to_string(count) + ")");
  }
  if ((error = cudaSetDevice(options.device)) != cudaSuccess) {
    return NoDevice("cudaSetDevice(" + std::to_string(options.device) + ")", error);
  }
  cudaDeviceProp properties{};
  if ((error = cudaGetDeviceProperties(&properties, options.device)) != cudaSuccess) {
    return NoDevice("cudaGetDeviceProperties", error);
  }
  cudaStream_t stream = nullptr;
  if ((error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
    return NoDevice("cudaStreamCreateWithFlags", error);
  }
  StreamPtr stream_ptr(stream);
  cublasHandle_t cublas = nullptr;
  const cublasStatus_t blas = cublasCreate(&cublas);
  if (blas != CUBLAS_STATUS_SUCCESS) {
    return FailedPrecondition(std::string("--device cuda: cublasCreate: ") +
                              cublasGetStatusString(blas) +
                              "; hint: check that libcublas matches the driver");
  }
  return std::unique_ptr<CudaCompute>(
      new CudaCompute(options.device, properties, std::move(stream_ptr), CublasPtr(cublas)));
}

CudaCompute::CudaCompute(int device, const cudaDeviceProp& properties, StreamPtr stream,
                         CublasPtr cublas)
    : device_(device),
      properties_(properties),
      stream_(std::move(stream)),
      cublas_(std::move(cublas)),
      allocator_(stream_.get()) {
  TRIDENT_CUBLAS_CHECK(cublasSetStream(cublas_.get(), stream_.get()));
  // fp32 products in full fp32, as the CPU backend computes them (no TF32 rounding), and bf16
  // products whose split-K partial sums stay fp32 (rounded to bf16 once, when stored).
  TRIDENT_CUBLAS_CHECK(cublasSetMathMode(
      cublas_.get(), static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
}

CudaCompute::~CudaCompute() {
  TRIDENT_CHECK(allocator_.stats().current_bytes == 0)
      << "CudaCompute destroyed while " << allocator_.stats().current_bytes
      << " bytes of its tensors are alive; HINT: tensors must be destroyed before their backend";
  for (cudaEvent_t mark : marks_) static_cast<void>(cudaEventDestroy(mark));
}

int CudaCompute::RecordMark() {
  if (marks_used_ == marks_.size()) {
    cudaEvent_t mark = nullptr;
    TRIDENT_CUDA_CHECK(cudaEventCreate(&mark));
    marks_.push_back(mark);
  }
  TRIDENT_CUDA_CHECK(cudaEventRecord(marks_[marks_used_], stream()));
  return static_cast<int>(marks_used_++);
}

double CudaCompute::MarkElapsedMs(int from, int to) const {
  TRIDENT_CHECK(from >= 0 && to >= 0 && static_cast<size_t>(std::max(from, to)) < marks_used_)
      << "CudaCompute::MarkElapsedMs: marks " << from << " and " << to << " of " << marks_used_;
  float ms = 0;
  TRIDENT_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[static_cast<size_t>(from)],
                                          marks_[static_cast<size_t>(to)]));
  return ms;
}

std::string CudaCompute::Describe() const {
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB",
                static_cast<double>(properties_.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return "cuda:" + std::to_string(device_) + " (" + properties_.name + ", sm_" +
         std::to_string(properties_.major) + std::to_string(properties_.minor) + ", " + memory +
         ")";
}

bool CudaCompute::Supports(ElementType type) const {
  return type == ElementType::kFp32 || type == ElementType::kBf16 || type == ElementType::kInt32;
}

void CudaCompute::Synchronize() { TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream())); }

void* CudaCompute::DoAllocate(int64_t bytes) { return allocator_.Allocate(bytes); }

void CudaCompute::DoFree(void* data, int64_t bytes) { allocator_.Free(data, bytes); }

// The host buffer belongs to the caller, who may free or change it once this returns: the
// copy completes before returning (stream order first, so it lands after earlier ops).
void CudaCompute::DoCopyFromHost(const void* host, Tensor& dst) {
  if (dst.bytes() == 0) return;
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), host, static_cast<size_t>(dst.bytes()),
                                     cudaMemcpyHostToDevice, stream()));
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void CudaCompute::DoCopyToHost(const Tensor& src, void* host) {
  if (src.bytes() == 0) return;
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(host, src.raw_data(), static_cast<size_t>(src.bytes()),
                                     cudaMemcpyDeviceToHost, stream()));
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

}  // namespace trident
