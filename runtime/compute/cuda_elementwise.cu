// CudaCompute's elementwise ops (fills, casts), bias ops and activations. Flat ops run grid-stride
// loops over the elements (each thread reads an index before writing it, so outputs may alias
// inputs where compute.h allows). Bias gradients give each block 32 columns and split their
// rows over the block's warps in a fixed pattern, summed in a fixed order: no atomics, the
// same bits on every run.
//
// GELU (tanh form), with u = k·(x + c·x³), k = √(2/π), c = 0.044715, t = tanh(u):
//   y = ½·x·(1 + t),  dy/dx = ½·(1 + t) + ½·x·(1 − t²)·k·(1 + 3c·x²).
// SiLU, with s = σ(x) = 1 / (1 + e^−x):  y = x·s,  dy/dx = s·(1 + x·(1 − s)).
#include "runtime/compute/cuda_kernels.cuh"

namespace trident {
namespace {

using cuda_kernels::DispatchFloat;
using cuda_kernels::FlatIndex;
using cuda_kernels::FlatStride;
using cuda_kernels::GridFor;
using cuda_kernels::kThreads;
using cuda_kernels::kWarp;
using cuda_kernels::Load;
using cuda_kernels::Ptr;
using cuda_kernels::Store;

constexpr float kGeluK = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluC = 0.044715f;

// Bias gradients: a block covers kWarp columns with kBiasRowGroups warps down the rows.
constexpr int kBiasRowGroups = 32;

__device__ __forceinline__ float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float Activate(ActivationKind f, float x) {
  if (f == ActivationKind::kGelu) {
    const float t = tanhf(kGeluK * (x + kGeluC * x * x * x));
    return 0.5f * x * (1.0f + t);
  }
  return x * Sigmoid(x);
}

__device__ __forceinline__ float ActivateGrad(ActivationKind f, float x) {
  if (f == ActivationKind::kGelu) {
    const float t = tanhf(kGeluK * (x + kGeluC * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluK * (1.0f + 3.0f * kGeluC * x * x);
  }
  const float s = Sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};

struct AxpyOp {  // (x, y) -> y + alpha·x
  float alpha;
  __device__ float operator()(float x, float y) const { return y + alpha * x; }
};

struct ScaleOp {
  float alpha;
  __device__ float operator()(float x) const { return x * alpha; }
};

struct ActivationOp {
  ActivationKind f;
  __device__ float operator()(float x) const { return Activate(f, x); }
};

struct ActivationBackwardOp {  // (x, dy) -> f'(x)·dy
  ActivationKind f;
  __device__ float operator()(float x, float dy) const { return dy * ActivateGrad(f, x); }
};

struct SwiGluOp {  // (gate, up) -> silu(gate)·up
  __device__ float operator()(float g, float u) const { return g * Sigmoid(g) * u; }
};

template <typename S, typename D>
__global__ void CastKernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) Store(dst, i, Load(src, i));
}

template <typename T>
__global__ void FillKernel(float value, T* dst, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) Store(dst, i, value);
}

template <typename T, typename Op>
__global__ void Map1Kernel(const T* a, T* out, int64_t n, Op op) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) Store(out, i, op(Load(a, i)));
}

template <typename T, typename Op>
__global__ void Map2Kernel(const T* a, const T* b, T* out, int64_t n, Op op) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    Store(out, i, op(Load(a, i), Load(b, i)));
  }
}

template <typename T>
__global__ void AddBiasKernel(const T* bias_C, T* y_NC, int64_t cols, int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    Store(y_NC, i, Load(y_NC, i) + Load(bias_C, i % cols));
  }
}

// Block (kWarp, kBiasRowGroups): thread (x, y) sums rows y, y + kBiasRowGroups, ... of column
// tile·kWarp + x in order; thread (x, 0) then adds the kBiasRowGroups partial sums in order.
template <typename T>
__global__ void BiasGradKernel(const T* dy_NC, T* dbias_C, int64_t rows, int64_t cols) {
  __shared__ float partial[kBiasRowGroups][kWarp + 1];
  const int64_t tiles = (cols + kWarp - 1) / kWarp;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t c = tile * kWarp + threadIdx.x;
    float sum = 0.0f;
    if (c < cols) {
      for (int64_t n = threadIdx.y; n < rows; n += kBiasRowGroups) sum += Load(dy_NC, n * cols + c);
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
      float total = Load(dbias_C, c);
      for (int g = 0; g < kBiasRowGroups; ++g) total += partial[g][threadIdx.x];
      Store(dbias_C, c, total);
    }
    __syncthreads();  // `partial` is rewritten by the next tile
  }
}

template <typename T>
__global__ void SwiGluBackwardKernel(const T* gate, const T* up, const T* dout, T* dgate, T* dup,
                                     int64_t n) {
  for (int64_t i = FlatIndex(); i < n; i += FlatStride()) {
    const float g = Load(gate, i);
    const float d = Load(dout, i);
    const float s = Sigmoid(g);
    Store(dgate, i, d * Load(up, i) * s * (1.0f + g * (1.0f - s)));
    Store(dup, i, d * g * s);
  }
}

// out = op(a) elementwise, over out's elements.
template <typename Op>
void Map1(const Tensor& a, Tensor& out, Op op, cudaStream_t stream) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DispatchFloat(out.type(), [&](auto tag) {
    using T = decltype(tag);
    Map1Kernel<T><<<GridFor(n), kThreads, 0, stream>>>(Ptr<T>(a), Ptr<T>(out), n, op);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

// out = op(a, b) elementwise, over out's elements.
template <typename Op>
void Map2(const Tensor& a, const Tensor& b, Tensor& out, Op op, cudaStream_t stream) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DispatchFloat(out.type(), [&](auto tag) {
    using T = decltype(tag);
    Map2Kernel<T><<<GridFor(n), kThreads, 0, stream>>>(Ptr<T>(a), Ptr<T>(b), Ptr<T>(out), n, op);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void CudaCompute::DoFill(float value, Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DispatchFloat(dst.type(), [&](auto tag) {
    using T = decltype(tag);
    FillKernel<T><<<GridFor(n), kThreads, 0, stream()>>>(value, Ptr<T>(dst), n);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoCast(const Tensor& src, Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DispatchFloat(src.type(), [&](auto src_tag) {
    DispatchFloat(dst.type(), [&](auto dst_tag) {
      using S = decltype(src_tag);
      using D = decltype(dst_tag);
      CastKernel<S, D><<<GridFor(n), kThreads, 0, stream()>>>(Ptr<S>(src), Ptr<D>(dst), n);
    });
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoAdd(const Tensor& a, const Tensor& b, Tensor& out) {
  Map2(a, b, out, AddOp{}, stream());
}

void CudaCompute::DoMul(const Tensor& a, const Tensor& b, Tensor& out) {
  Map2(a, b, out, MulOp{}, stream());
}

void CudaCompute::DoAxpy(float alpha, const Tensor& x, Tensor& y) {
  Map2(x, y, y, AxpyOp{alpha}, stream());
}

void CudaCompute::DoScale(float alpha, Tensor& x) { Map1(x, x, ScaleOp{alpha}, stream()); }

void CudaCompute::DoAddBias(const Tensor& bias_C, Tensor& y_NC) {
  const int64_t cols = bias_C.numel();
  const int64_t n = y_NC.numel();
  if (cols == 0 || n == 0) return;
  DispatchFloat(y_NC.type(), [&](auto tag) {
    using T = decltype(tag);
    AddBiasKernel<T><<<GridFor(n), kThreads, 0, stream()>>>(Ptr<T>(bias_C), Ptr<T>(y_NC), cols, n);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoBiasGrad(const Tensor& dy_NC, Tensor& dbias_C) {
  const int64_t cols = dbias_C.numel();
  if (cols == 0) return;
  const int64_t rows = dy_NC.numel() / cols;
  if (rows == 0) return;
  const int64_t tiles = (cols + kWarp - 1) / kWarp;
  const unsigned blocks = static_cast<unsigned>(tiles < 65535 * 16 ? tiles : 65535 * 16);
  const dim3 threads(kWarp, kBiasRowGroups);
  DispatchFloat(dbias_C.type(), [&](auto tag) {
    using T = decltype(tag);
    BiasGradKernel<T><<<blocks, threads, 0, stream()>>>(Ptr<T>(dy_NC), Ptr<T>(dbias_C), rows, cols);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

void CudaCompute::DoActivation(ActivationKind f, const Tensor& x, Tensor& y) {
  Map1(x, y, ActivationOp{f}, stream());
}

void CudaCompute::DoActivationBackward(ActivationKind f, const Tensor& x, const Tensor& dy,
                                       Tensor& dx) {
  Map2(x, dy, dx, ActivationBackwardOp{f}, stream());
}

void CudaCompute::DoSwiGlu(const Tensor& gate, const Tensor& up, Tensor& out) {
  Map2(gate, up, out, SwiGluOp{}, stream());
}

void CudaCompute::DoSwiGluBackward(const Tensor& gate, const Tensor& up, const Tensor& dout,
                                   Tensor& dgate, Tensor& dup) {
  const int64_t n = gate.numel();
  if (n == 0) return;
  DispatchFloat(dgate.type(), [&](auto tag) {
    using T = decltype(tag);
    SwiGluBackwardKernel<T><<<GridFor(n), kThreads, 0, stream()>>>(
        Ptr<T>(gate), Ptr<T>(up), Ptr<T>(dout), Ptr<T>(dgate), Ptr<T>(dup), n);
  });
  TRIDENT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace trident
