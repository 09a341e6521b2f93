// Elementwise maps: the math of every op that reads and writes element i of its operands and
// nothing else (Fill, Add, Mul, Axpy, Scale, the activations and their gradients, SwiGLU, the
// AdamW and SGD updates), written once for every backend. Compute's public methods check and
// widen the operands, then hand the backend one MapCall; the backend supplies only the loop:
//
//   std::visit([&](const auto& op) { /* for each block or element: */ op(values); }, call.op);
//
// A map is a functor with kOperands operands in a fixed order; bit k of kReads says operand k is
// read, bit k of kWrites that it is written (both: updated in place). Its call operator takes
// the operands as an array of V, reads the ones it reads and assigns the ones it writes: V is
// float on a GPU (one element per thread, in registers) and on the CPU an Eigen map of a block
// of each operand's fp32 elements (so the arithmetic vectorizes and writes land in place).
// MapMath<V> gives the functions the maps need on V and the type of a temporary (Value); a
// backend with another V specializes it. Every operand has the call's element type and element
// count; values are fp32 (a backend reads bf16 into fp32 and rounds once on store).
// Aliasing: a map assigns each output once, and an output that may alias an input (compute.h)
// is assigned in one expression that reads that input element by element, so an output that is
// the very same elements as an input is computed right whether V holds values or maps memory.
// Header of runtime/compute only; compiled by the host compiler and by nvcc.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <variant>

#include "runtime/compute/compute.h"

#if defined(__CUDACC__)
#define TRIDENT_MAP_FN __host__ __device__ __forceinline__
#else
#define TRIDENT_MAP_FN inline
#endif

namespace trident {

template <typename V>
struct MapMath;

template <>
struct MapMath<float> {
  using Value = float;
  static TRIDENT_MAP_FN float Tanh(float x) { return tanhf(x); }
  static TRIDENT_MAP_FN float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
  static TRIDENT_MAP_FN float Sqrt(float x) { return sqrtf(x); }
  static TRIDENT_MAP_FN float Constant(float value, float /*like*/) { return value; }
};

inline constexpr float kGeluK = 0.7978845608028654f;  // √(2/π)
inline constexpr float kGeluC = 0.044715f;

// out = value.  Operands: out.
struct FillMap {
  static constexpr int kOperands = 1;
  static constexpr unsigned kReads = 0b0, kWrites = 0b1;
  float value;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[0] = MapMath<V>::Constant(value, x[0]);
  }
};

// out = a + b.  Operands: a, b, out.
struct AddMap {
  static constexpr int kOperands = 3;
  static constexpr unsigned kReads = 0b011, kWrites = 0b100;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[2] = x[0] + x[1];
  }
};

// out = a · b.  Operands: a, b, out.
struct MulMap {
  static constexpr int kOperands = 3;
  static constexpr unsigned kReads = 0b011, kWrites = 0b100;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[2] = x[0] * x[1];
  }
};

// y += alpha · x.  Operands: x, y.
struct AxpyMap {
  static constexpr int kOperands = 2;
  static constexpr unsigned kReads = 0b11, kWrites = 0b10;
  float alpha;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[1] = x[1] + alpha * x[0];
  }
};

// x = alpha · x.  Operands: x.
struct ScaleMap {
  static constexpr int kOperands = 1;
  static constexpr unsigned kReads = 0b1, kWrites = 0b1;
  float alpha;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[0] = x[0] * alpha;
  }
};

// GELU (tanh form), with t = tanh(k·(x + c·x³)), k = √(2/π), c = 0.044715:
//   y = ½·x·(1 + t),  dy/dx = ½·(1 + t) + ½·x·(1 − t²)·k·(1 + 3c·x²).
// Operands: x, y.
struct GeluMap {
  static constexpr int kOperands = 2;
  static constexpr unsigned kReads = 0b01, kWrites = 0b10;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    const typename MapMath<V>::Value t =
        MapMath<V>::Tanh(kGeluK * (x[0] + kGeluC * x[0] * x[0] * x[0]));
    x[1] = 0.5f * x[0] * (1.0f + t);
  }
};

// dx = gelu'(x) · dy.  Operands: x, dy, dx.
struct GeluGradMap {
  static constexpr int kOperands = 3;
  static constexpr unsigned kReads = 0b011, kWrites = 0b100;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    const typename MapMath<V>::Value t =
        MapMath<V>::Tanh(kGeluK * (x[0] + kGeluC * x[0] * x[0] * x[0]));
    x[2] = x[1] * (0.5f * (1.0f + t) +
                   0.5f * x[0] * (1.0f - t * t) * kGeluK * (1.0f + 3.0f * kGeluC * x[0] * x[0]));
  }
};

// SiLU, with s = σ(x) = 1 / (1 + e^−x):  y = x·s,  dy/dx = s·(1 + x·(1 − s)).
// Operands: x, y.
struct SiluMap {
  static constexpr int kOperands = 2;
  static constexpr unsigned kReads = 0b01, kWrites = 0b10;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[1] = x[0] * MapMath<V>::Sigmoid(x[0]);
  }
};

// dx = silu'(x) · dy.  Operands: x, dy, dx.
struct SiluGradMap {
  static constexpr int kOperands = 3;
  static constexpr unsigned kReads = 0b011, kWrites = 0b100;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    const typename MapMath<V>::Value s = MapMath<V>::Sigmoid(x[0]);
    x[2] = x[1] * s * (1.0f + x[0] * (1.0f - s));
  }
};

// out = silu(gate) · up (Llama's MLP).  Operands: gate, up, out.
struct SwiGluMap {
  static constexpr int kOperands = 3;
  static constexpr unsigned kReads = 0b011, kWrites = 0b100;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[2] = x[0] * MapMath<V>::Sigmoid(x[0]) * x[1];
  }
};

// dgate = dout · up · σ(g)·(1 + g·(1 − σ(g))),  dup = dout · g·σ(g).
// Operands: gate, up, dout, dgate, dup.
struct SwiGluGradMap {
  static constexpr int kOperands = 5;
  static constexpr unsigned kReads = 0b00111, kWrites = 0b11000;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    const typename MapMath<V>::Value s = MapMath<V>::Sigmoid(x[0]);
    x[3] = x[2] * x[1] * s * (1.0f + x[0] * (1.0f - s));
    x[4] = x[2] * x[0] * s;
  }
};

// One AdamW step (compute.h), with the bias corrections c1 = 1 − β1^step, c2 = 1 − β2^step
// computed once per call:  m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;
//   param −= lr · ((m / c1) / (√(v / c2) + eps) + weight_decay · param).
// Operands: grad, param, m, v.
struct AdamWMap {
  static constexpr int kOperands = 4;
  static constexpr unsigned kReads = 0b1111, kWrites = 0b1110;
  AdamWConfig config;
  float correction1;
  float correction2;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    const typename MapMath<V>::Value m = config.beta1 * x[2] + (1.0f - config.beta1) * x[0];
    const typename MapMath<V>::Value v =
        config.beta2 * x[3] + (1.0f - config.beta2) * (x[0] * x[0]);
    x[1] =
        x[1] - config.lr * ((m / correction1) / (MapMath<V>::Sqrt(v / correction2) + config.eps) +
                            config.weight_decay * x[1]);
    x[2] = m;
    x[3] = v;
  }
};

// SGD without a momentum buffer:  param −= lr · (g + weight_decay · param).
// Operands: grad, param.
struct SgdMap {
  static constexpr int kOperands = 2;
  static constexpr unsigned kReads = 0b11, kWrites = 0b10;
  SgdConfig config;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[1] = x[1] - config.lr * (x[0] + config.weight_decay * x[1]);
  }
};

// SGD with momentum:  buf = momentum · buf + g + weight_decay · param;  param −= lr · buf.
// Operands: grad, param, buf.
struct SgdMomentumMap {
  static constexpr int kOperands = 3;
  static constexpr unsigned kReads = 0b111, kWrites = 0b110;
  SgdConfig config;
  template <typename V>
  TRIDENT_MAP_FN void operator()(V* x) const {
    x[2] = config.momentum * x[2] + x[0] + config.weight_decay * x[1];
    x[1] = x[1] - config.lr * x[2];
  }
};

using MapOp =
    std::variant<FillMap, AddMap, MulMap, AxpyMap, ScaleMap, GeluMap, GeluGradMap, SiluMap,
                 SiluGradMap, SwiGluMap, SwiGluGradMap, AdamWMap, SgdMap, SgdMomentumMap>;

inline constexpr int kMaxMapOperands = 5;

// One map over operands that Compute has checked and widened: each holds `numel` elements of
// `type`, a float type the backend computes on. REQUIRES (of the caller): numel > 0; the
// operands the op writes overlap no other operand, or are the very same elements (an output
// may alias an input where compute.h allows: each element is read before it is written).
struct MapCall {
  MapOp op;
  ElementType type = ElementType::kFp32;
  int64_t numel = 0;
  std::array<void*, kMaxMapOperands> data{};  // operand k's first element, in the op's order
};

}  // namespace trident
