// CpuCompute's elementwise ops, bias ops and activations. Flat ops split the elements across
// threads; bias gradients split the columns, so each column sums its rows in order on one
// thread (the same bits for every thread count).
//
// GELU (tanh form), with u = k·(x + c·x³), k = √(2/π), c = 0.044715, t = tanh(u):
//   y = ½·x·(1 + t),  dy/dx = ½·(1 + t) + ½·x·(1 − t²)·k·(1 + 3c·x²).
// SiLU, with s = σ(x) = 1 / (1 + e^−x):  y = x·s,  dy/dx = s·(1 + x·(1 − s)).
#include <algorithm>

#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"

namespace trident {
namespace {

constexpr float kGeluK = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluC = 0.044715f;

// Activations work through [begin, end) in blocks that fit on the stack, so the shared
// subexpression (tanh, σ) is computed once without a heap temporary.
constexpr int64_t kBlock = 256;
using BlockArray = Eigen::Array<float, Eigen::Dynamic, 1, 0, kBlock, 1>;

template <typename Fn>
void ForBlocks(int64_t begin, int64_t end, Fn fn) {
  for (int64_t b = begin; b < end; b += kBlock) fn(b, std::min(b + kBlock, end));
}

void GeluBlock(const ConstArrayMap& x, const ConstArrayMap* dy, ArrayMap out) {
  const BlockArray t = (kGeluK * (x + kGeluC * x.cube())).tanh();
  if (dy == nullptr) {
    out = 0.5f * x * (1.0f + t);
    return;
  }
  out = *dy * (0.5f * (1.0f + t) +
               0.5f * x * (1.0f - t.square()) * kGeluK * (1.0f + 3.0f * kGeluC * x.square()));
}

void SiluBlock(const ConstArrayMap& x, const ConstArrayMap* dy, ArrayMap out) {
  const BlockArray s = x.logistic();
  if (dy == nullptr) {
    out = x * s;
    return;
  }
  out = *dy * s * (1.0f + x * (1.0f - s));
}

}  // namespace

void CpuCompute::DoAdd(const Tensor& a, const Tensor& b, Tensor& out) {
  threads_.ParallelFor(out.numel(), 1, [&](int64_t begin, int64_t end) {
    Elements(out, begin, end) = Elements(a, begin, end) + Elements(b, begin, end);
  });
}

void CpuCompute::DoMul(const Tensor& a, const Tensor& b, Tensor& out) {
  threads_.ParallelFor(out.numel(), 1, [&](int64_t begin, int64_t end) {
    Elements(out, begin, end) = Elements(a, begin, end) * Elements(b, begin, end);
  });
}

void CpuCompute::DoAxpy(float alpha, const Tensor& x, Tensor& y) {
  threads_.ParallelFor(y.numel(), 1, [&](int64_t begin, int64_t end) {
    Elements(y, begin, end) += alpha * Elements(x, begin, end);
  });
}

void CpuCompute::DoScale(float alpha, Tensor& x) {
  threads_.ParallelFor(x.numel(), 1,
                       [&](int64_t begin, int64_t end) { Elements(x, begin, end) *= alpha; });
}

void CpuCompute::DoAddBias(const Tensor& bias_C, Tensor& y_NC) {
  const int64_t cols = bias_C.numel();
  if (cols == 0) return;
  const ConstArrayMap bias = Elements(bias_C, 0, cols);
  threads_.ParallelFor(y_NC.numel() / cols, cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) Row(y_NC, cols, n) += bias;
  });
}

void CpuCompute::DoBiasGrad(const Tensor& dy_NC, Tensor& dbias_C) {
  const int64_t cols = dbias_C.numel();
  if (cols == 0) return;
  const int64_t rows = dy_NC.numel() / cols;
  threads_.ParallelFor(cols, rows, [&](int64_t begin, int64_t end) {
    ArrayMap dbias = Elements(dbias_C, begin, end);
    for (int64_t n = 0; n < rows; ++n) dbias += RowSegment(dy_NC, cols, n, begin, end);
  });
}

void CpuCompute::DoActivation(ActivationKind f, const Tensor& x, Tensor& y) {
  threads_.ParallelFor(x.numel(), 16, [&](int64_t begin, int64_t end) {
    ForBlocks(begin, end, [&](int64_t b, int64_t e) {
      const ConstArrayMap xb = Elements(x, b, e);
      if (f == ActivationKind::kGelu) {
        GeluBlock(xb, nullptr, Elements(y, b, e));
      } else {
        SiluBlock(xb, nullptr, Elements(y, b, e));
      }
    });
  });
}

void CpuCompute::DoActivationBackward(ActivationKind f, const Tensor& x, const Tensor& dy,
                                      Tensor& dx) {
  threads_.ParallelFor(x.numel(), 16, [&](int64_t begin, int64_t end) {
    ForBlocks(begin, end, [&](int64_t b, int64_t e) {
      const ConstArrayMap xb = Elements(x, b, e);
      const ConstArrayMap dyb = Elements(dy, b, e);
      if (f == ActivationKind::kGelu) {
        GeluBlock(xb, &dyb, Elements(dx, b, e));
      } else {
        SiluBlock(xb, &dyb, Elements(dx, b, e));
      }
    });
  });
}

void CpuCompute::DoSwiGlu(const Tensor& gate, const Tensor& up, Tensor& out) {
  threads_.ParallelFor(out.numel(), 16, [&](int64_t begin, int64_t end) {
    ForBlocks(begin, end, [&](int64_t b, int64_t e) {
      const BlockArray g = Elements(gate, b, e);
      Elements(out, b, e) = g * g.logistic() * Elements(up, b, e);
    });
  });
}

// dgate = dout · up · σ(g)·(1 + g·(1 − σ(g))),  dup = dout · g·σ(g).
void CpuCompute::DoSwiGluBackward(const Tensor& gate, const Tensor& up, const Tensor& dout,
                                  Tensor& dgate, Tensor& dup) {
  threads_.ParallelFor(gate.numel(), 16, [&](int64_t begin, int64_t end) {
    ForBlocks(begin, end, [&](int64_t b, int64_t e) {
      const ConstArrayMap g = Elements(gate, b, e);
      const ConstArrayMap d = Elements(dout, b, e);
      const BlockArray s = g.logistic();
      Elements(dgate, b, e) = d * Elements(up, b, e) * s * (1.0f + g * (1.0f - s));
      Elements(dup, b, e) = d * g * s;
    });
  });
}

}  // namespace trident
