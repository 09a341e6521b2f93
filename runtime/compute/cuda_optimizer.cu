// CudaCompute's AdamW and SGD updates over flat fp32 buffers (the master weights), one
// grid-stride kernel each, in the CPU backend's order of operations.
//
// AdamW (bias corrections c1 = 1 − β1^step, c2 = 1 − β2^step in double on the host, once):
//   m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;
//   param −= lr · ((m / c1) / (√(v / c2) + eps) + weight_decay · param).
// SGD: g' = g + weight_decay · param; with a buffer: buf = momentum · buf + g', param −= lr · buf;
// without one (momentum == 0): param −= lr · g'.
#include <cmath>

#include "runtime/compute/cuda_kernels.cuh"

namespace trident {
namespace {

using cuda_kernels::FlatIndex;
using cuda_kernels::FlatStride;
using cuda_kernels::GridFor;
using cuda_kernels::kThreads;
using cuda_kernels::Ptr;

void CheckFp32(const char* op, const char* name, const Tensor& t) {
  TRIDENT_CHECK(t.type() == ElementType::kFp32)
      << "Compute::" << op << ": " << name << " " << t.ToString()
      << ": CudaCompute's optimizers take fp32 buffers (the master weights)";
}

__global__ void AdamWKernel(AdamWConfig config, float correction1, float correction2,
                            const float* __restrict__ grad, float* __restrict__ param,
                            float* __restrict__ m, float* __restrict__ v, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    const float g = grad[i];
    const float p = param[i];
    const float m_i = config.beta1 * m[i] + (1.0f - config.beta1) * g;
    const float v_i = config.beta2 * v[i] + (1.0f - config.beta2) * (g * g);
    m[i] = m_i;
    v[i] = v_i;
    param[i] = p - config.lr * ((m_i / correction1) / (sqrtf(v_i / correction2) + config.eps) +
                                config.weight_decay * p);
  }
}

// `buf` is null when there is no momentum buffer.
__global__ void SgdKernel(SgdConfig config, const float* __restrict__ grad,
                          float* __restrict__ param, float* __restrict__ buf, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    const float p = param[i];
    if (buf == nullptr) {
      param[i] = p - config.lr * (grad[i] + config.weight_decay * p);
    } else {
      const float u = config.momentum * buf[i] + grad[i] + config.weight_decay * p;
      buf[i] = u;
      param[i] = p - config.lr * u;
    }
  }
}

}  // namespace

void CudaCompute::DoAdamW(const AdamWConfig& config, int64_t step, const Tensor& grad,
                          Tensor& param, Tensor& m, Tensor& v) {
  CheckFp32("AdamW", "param", param);
  CheckFp32("AdamW", "grad", grad);
  CheckFp32("AdamW", "m", m);
  CheckFp32("AdamW", "v", v);
  const int64_t n = param.numel();
  if (n == 0) return;
  const auto correction1 =
      static_cast<float>(1.0 - std::pow(double{config.beta1}, static_cast<double>(step)));
  const auto correction2 =
      static_cast<float>(1.0 - std::pow(double{config.beta2}, static_cast<double>(step)));
  AdamWKernel<<<GridFor(n), kThreads, 0, stream()>>>(config, correction1, correction2,
                                                     Ptr<float>(grad), Ptr<float>(param),
                                                     Ptr<float>(m), Ptr<float>(v), n);
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoSgd(const SgdConfig& config, const Tensor& grad, Tensor& param, Tensor& buf) {
  CheckFp32("Sgd", "param", param);
  CheckFp32("Sgd", "grad", grad);
  if (buf.defined()) CheckFp32("Sgd", "buf", buf);
  const int64_t n = param.numel();
  if (n == 0) return;
  float* buf_data = buf.defined() ? Ptr<float>(buf) : nullptr;
  SgdKernel<<<GridFor(n), kThreads, 0, stream()>>>(config, Ptr<float>(grad), Ptr<float>(param),
                                                   buf_data, n);
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace trident
