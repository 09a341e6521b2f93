// CudaCompute against CpuCompute, op by op: one table of (op, shape) cases, each run on both
// backends from the same seeded host data, in fp32 and in bf16, one ctest entry per (case,
// dtype).
//
// A case builds its inputs through an OpContext, runs its ops and reads its outputs back as
// host floats. In a bf16 case the CUDA side uploads fp32 and Casts to bf16 tensors, and reads
// outputs back through a Cast to fp32; the CPU backend has fp32 only, so its side runs in fp32
// on inputs rounded to bf16 on the host first (RoundToBf16), and both sides see identical
// inputs. Saved statistics (mean_N, rstd_N), losses, ids and targets stay fp32 / int32 as
// compute.h says; the optimizers run in fp32 only (fp32 master buffers). Outputs that an op
// overwrites start as NaN, so an op that reads them fails; accumulating outputs start nonzero.
//
// Agreement, per output: the normalized error max_i |cuda_i − cpu_i| / max(max_i |cpu_i|, 1e-6)
// (any NaN or infinity counts as infinite) must be within the bound of the case's family and
// the output's element type. Unit roundoffs: u = 2^-24 for fp32; 2^-8 ≈ 3.9e-3 for bf16 (8
// significant bits: a bf16 store is off by up to 2^-8 of the value, 2^-9 at the top of a
// binade). The CPU side's outputs are not rounded, so a bf16 output differs by its rounding.
//
//   family          fp32   bf16    why
//   exact           0      0       copies, gathers, fills of a bf16 value, casts: no arithmetic,
//                                  and both sides round to bf16 to nearest even.
//   elementwise     1e-5   8e-3    a few fp32 operations per element; CUDA's expf/tanhf and
//                                  Eigen's vectorized exp/tanh/logistic differ by a few ulps,
//                                  which 1 − tanh² in GELU's derivative turns into ~3e-6 of the
//                                  largest output. bf16: each output is rounded once (<= 3.9e-3
//                                  of itself); 8e-3 is two such roundings.
//   reduction       3e-5   1e-2    sums of <= 1024 terms per row or 256 rows per column, in
//                                  other orders (block trees on the GPU, Eigen's packets on the
//                                  CPU): ~√n·u ≈ 2e-6 of the largest output in practice. bf16:
//                                  one rounding of the fp32 result.
//   scatter-add     3e-5   1.6e-2  EmbeddingBackward: both sides add rows in token order. bf16:
//                                  the GPU stores (rounds) after every row, and ids repeat up to
//                                  3 times here: <= 3 roundings of partial sums; a simulation
//                                  of the kernel over 20000 seeds stayed below 9e-3.
//   wide reduction  1e-4   1e-2    softmax and loss over a 50257-word vocabulary: the error of
//                                  the sum Z over 50257 terms (~√n·u ≈ 1e-5) reaches every
//                                  probability.
//   gemm            1e-4   1e-2    dot products of K <= 3072 terms in other orders (cuBLAS
//                                  tiles, possibly split-K, against Eigen's blocks): ~√K·u ≈
//                                  3e-6 of the largest output in practice, K·u ≈ 2e-4 of Σ|a·b|
//                                  at worst; TF32 (~1e-3) would fail it. bf16: exact products,
//                                  fp32 sums, one rounding of C, and a few more if cuBLAS rounds
//                                  split-K partial sums to bf16 (simulated: <= 5e-3 for 2 to 16
//                                  splits at K = 3072).
//   optimizer       1e-5   —       a handful of fp32 operations per element and step, 3 steps.
//
// The fp32-by-contract outputs of a bf16 case (mean_N, rstd_N, loss) get the fp32 bound: they
// are computed in fp32 from identical inputs. Every comparison prints
// "AGREE <case> <dtype> <output> error <e> bound <b>" (exact ones "EXACT <case> <dtype>
// <output> error <e>"), which scripts/gpu-check summarizes.
//
// Without a usable GPU, or in a build without CUDA, every CUDA test skips (ctest reports it
// skipped); CudaFactoryTest runs everywhere.
//
// Shape legend: N rows, C columns, V vocabulary, S sequence, B sequences, A heads, D head size,
// H hidden (A·D); M, N, K the GEMM dimensions ([M × K] · [K × N]).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "compute_test_util.h"
#include "core/status.h"
#include "runtime/compute/compute_factory.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// x rounded to the nearest bf16 (ties to even), as a float: the upper 16 bits of its pattern.
// NaNs stay NaN (quieted, sign kept); overflow rounds to infinity, as in __float2bfloat16.
float RoundToBf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return std::bit_cast<float>((bits | 0x00400000u) & 0xFFFF0000u);
  }
  const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(rounded & 0xFFFF0000u);
}

// --- The harness ---------------------------------------------------------------------------

enum class Family {
  kExact,
  kElementwise,
  kReduction,
  kScatterAdd,
  kWideReduction,
  kGemm,
  kOptimizer
};

// The bound on the normalized error of an output stored as `stored` (see the top).
double Bound(Family family, ElementType stored) {
  const bool bf16 = stored == ElementType::kBf16;
  switch (family) {
    case Family::kExact:
      return 0.0;
    case Family::kElementwise:
      return bf16 ? 8e-3 : 1e-5;
    case Family::kReduction:
      return bf16 ? 1e-2 : 3e-5;
    case Family::kScatterAdd:
      return bf16 ? 1.6e-2 : 3e-5;
    case Family::kWideReduction:
    case Family::kGemm:
      return bf16 ? 1e-2 : 1e-4;
    case Family::kOptimizer:
      return 1e-5;
  }
  return 0.0;
}

struct OpOutput {
  std::string name;
  std::vector<float> values;
  bool fp32_by_contract = false;  // fp32 whatever the case's type (statistics, losses)
};

// What a case runs on: a backend, the element type of its float tensors (bf16 only on the CUDA
// side of a bf16 case), and whether host data is rounded to bf16 before upload (the CPU side
// of a bf16 case). Collects the case's outputs.
class OpContext {
 public:
  OpContext(Compute& compute, ElementType type, bool round_to_bf16)
      : compute_(compute), type_(type), round_to_bf16_(round_to_bf16) {}

  Compute& compute() { return compute_; }

  // A tensor of the working type holding `values` (rounded to bf16 in a bf16 case).
  Tensor Input(std::vector<int64_t> shape, std::vector<float> values) {
    if (round_to_bf16_) {
      for (float& v : values) v = RoundToBf16(v);
    }
    Tensor fp32 = Upload(compute_, shape, values);
    if (type_ == ElementType::kFp32) return fp32;
    Tensor t = compute_.Allocate(std::move(shape), type_);
    compute_.Cast(fp32, t);
    return t;
  }
  // A tensor of the working type full of NaN: an output the op must overwrite.
  Tensor Garbage(std::vector<int64_t> shape) {
    Tensor t = compute_.Allocate(std::move(shape), type_);
    compute_.Fill(kNan, t);
    return t;
  }
  // fp32 tensors whatever the case's type: statistics, losses, optimizer buffers. Not rounded.
  Tensor Fp32(std::vector<int64_t> shape, const std::vector<float>& values) {
    return Upload(compute_, std::move(shape), values);
  }
  Tensor Fp32Garbage(std::vector<int64_t> shape) {
    Tensor t = compute_.Allocate(std::move(shape));
    compute_.Fill(kNan, t);
    return t;
  }
  Tensor Ids(std::vector<int64_t> shape, const std::vector<int32_t>& ids) {
    return UploadIds(compute_, std::move(shape), ids);
  }

  // Records the values of an output of the working type (read through an fp32 Cast if bf16).
  void Output(std::string name, const Tensor& t) {
    outputs_.push_back({std::move(name), ReadAsFp32(t), false});
  }
  // Records an output that is fp32 by contract.
  void OutputFp32(std::string name, const Tensor& t) {
    ASSERT_EQ(t.type(), ElementType::kFp32) << name;
    outputs_.push_back({std::move(name), Download(compute_, t), true});
  }
  // Records host values as a store of the working type would leave them: rounded to bf16 on
  // the CPU side of a bf16 case (the expectation for a device Cast).
  void OutputAsStored(std::string name, std::vector<float> values) {
    if (round_to_bf16_) {
      for (float& v : values) v = RoundToBf16(v);
    }
    outputs_.push_back({std::move(name), std::move(values), false});
  }

  ElementType type() const { return type_; }
  std::vector<OpOutput> TakeOutputs() { return std::move(outputs_); }

 private:
  std::vector<float> ReadAsFp32(const Tensor& t) {
    if (t.type() == ElementType::kFp32) return Download(compute_, t);
    Tensor fp32 = compute_.Allocate(t.shape());
    compute_.Cast(t, fp32);
    return Download(compute_, fp32);
  }

  Compute& compute_;
  ElementType type_;
  bool round_to_bf16_;
  std::vector<OpOutput> outputs_;
};

struct OpCase {
  std::string name;  // letters, digits and '_' (a gtest parameter name)
  Family family;
  bool fp32_only;
  std::function<void(OpContext&)> run;
};

struct CaseParam {
  const OpCase* op;
  ElementType type;
};

void PrintTo(const CaseParam& param, std::ostream* os) {
  *os << param.op->name << " " << ElementTypeName(param.type);
}

// The normalized error of `cuda` against `cpu` and where it is largest.
struct Agreement {
  double error = 0.0;
  size_t worst = 0;
  double scale = 0.0;  // max(max_i |cpu_i|, 1e-6)
};

Agreement Compare(const std::vector<float>& cuda, const std::vector<float>& cpu) {
  Agreement result;
  for (float v : cpu) {
    if (std::isfinite(v)) result.scale = std::max(result.scale, std::abs(double{v}));
  }
  result.scale = std::max(result.scale, 1e-6);
  for (size_t i = 0; i < cpu.size(); ++i) {
    const bool finite = std::isfinite(cuda[i]) && std::isfinite(cpu[i]);
    const double diff = finite ? std::abs(double{cuda[i]} - double{cpu[i]})
                               : std::numeric_limits<double>::infinity();
    if (diff / result.scale > result.error) {
      result.error = diff / result.scale;
      result.worst = i;
    }
  }
  return result;
}

void ExpectAgreement(const OpCase& op, ElementType type, const OpOutput& cuda,
                     const OpOutput& cpu) {
  ASSERT_EQ(cuda.name, cpu.name) << op.name;
  ASSERT_EQ(cuda.values.size(), cpu.values.size()) << op.name << " " << cuda.name;
  const ElementType stored = cuda.fp32_by_contract ? ElementType::kFp32 : type;
  const double bound = Bound(op.family, stored);
  const Agreement a = Compare(cuda.values, cpu.values);
  const std::string what = op.name + " " + ElementTypeName(type) + " " + cuda.name;
  if (op.family == Family::kExact) {
    std::printf("EXACT %s error %.3e\n", what.c_str(), a.error);
  } else {
    std::printf("AGREE %s error %.3e bound %.1e\n", what.c_str(), a.error, bound);
  }
  if (cpu.values.empty()) return;
  EXPECT_LE(a.error, bound) << what << ": normalized error " << a.error << " > bound " << bound
                            << "; worst element " << a.worst << ": cuda " << cuda.values[a.worst]
                            << ", cpu " << cpu.values[a.worst] << " (max |cpu| " << a.scale << ")";
}

// --- Cases: matrix products ----------------------------------------------------------------

struct GemmShape {
  const char* label;
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
};

void RunGemm(OpContext& ctx, const GemmShape& g) {
  const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
  const int64_t b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
  Tensor a = ctx.Input({a_rows, a_cols}, RandomFloats(a_rows * a_cols, 1));
  Tensor b = ctx.Input({b_rows, b_cols}, RandomFloats(b_rows * b_cols, 2));
  Tensor c = ctx.Input({g.m, g.n}, RandomFloats(g.m * g.n, 3));
  if (g.beta == 0.0f) ctx.compute().Fill(kNan, c);  // beta 0 ignores C, NaNs included
  ctx.compute().Gemm(g.trans_a, g.trans_b, g.alpha, a, b, g.beta, c);
  ctx.Output("c", c);
}

struct AttentionShape {
  const char* label;
  int64_t batch, seq, heads, head_dim;
};

// The four products of attention per sequence b, with the heads as the batch, reading and
// writing the heads in place inside qkv_BS3H, y_BSH and dqkv_BS3H (compute.h, MatrixLayout):
//   scores = q·kᵀ / √D (β 0),  y += probs·v (β 1),  dprobs = dy·vᵀ (β 0),  dv = probsᵀ·dy (β 0).
void RunAttentionGemms(OpContext& ctx, const AttentionShape& s) {
  const int64_t seq = s.seq, heads = s.heads, dim = s.head_dim, hidden = heads * dim;
  const int64_t tokens = s.batch * seq;
  Tensor qkv = ctx.Input({s.batch, seq, 3 * hidden}, RandomFloats(tokens * 3 * hidden, 1));
  Tensor probs = ctx.Input({s.batch, heads, seq, seq},
                           RandomFloats(s.batch * heads * seq * seq, 2, 0.0f, 1.0f));
  Tensor dy = ctx.Input({s.batch, seq, hidden}, RandomFloats(tokens * hidden, 3));
  Tensor y = ctx.Input({s.batch, seq, hidden}, RandomFloats(tokens * hidden, 4));
  // Only v's part of dqkv is written.
  Tensor dqkv = ctx.Input({s.batch, seq, 3 * hidden}, RandomFloats(tokens * 3 * hidden, 5));
  Tensor scores = ctx.Garbage({s.batch, heads, seq, seq});
  Tensor dprobs = ctx.Garbage({s.batch, heads, seq, seq});
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  Compute& compute = ctx.compute();
  for (int64_t b = 0; b < s.batch; ++b) {
    const MatrixLayout q{
        .offset = b * seq * 3 * hidden, .rows = seq, .cols = dim, .ld = 3 * hidden, .stride = dim};
    MatrixLayout k = q, v = q;
    k.offset += hidden;
    v.offset += 2 * hidden;
    const MatrixLayout ss{
        .offset = b * heads * seq * seq, .rows = seq, .cols = seq, .ld = seq, .stride = seq * seq};
    const MatrixLayout sd{
        .offset = b * seq * hidden, .rows = seq, .cols = dim, .ld = hidden, .stride = dim};
    compute.GemmStridedBatched(
        {.batch = heads, .trans_b = true, .alpha = scale, .a = q, .b = k, .c = ss}, qkv, qkv,
        scores);
    compute.GemmStridedBatched({.batch = heads, .beta = 1.0f, .a = ss, .b = v, .c = sd}, probs, qkv,
                               y);
    compute.GemmStridedBatched({.batch = heads, .trans_b = true, .a = sd, .b = v, .c = ss}, dy, qkv,
                               dprobs);
    compute.GemmStridedBatched({.batch = heads, .trans_a = true, .a = ss, .b = sd, .c = v}, probs,
                               dy, dqkv);
  }
  ctx.Output("scores", scores);
  ctx.Output("y", y);
  ctx.Output("dprobs", dprobs);
  ctx.Output("dqkv", dqkv);
}

void AddGemmCases(std::vector<OpCase>& cases) {
  const GemmShape shapes[] = {
      {"7x5x13_beta0", 7, 5, 13, false, false, 1.0f, 0.0f},
      {"7x5x13_beta1", 7, 5, 13, true, false, 0.5f, 1.0f},
      {"7x5x13_beta025", 7, 5, 13, false, true, -2.0f, 0.25f},
      {"7x5x13_betaminus1", 7, 5, 13, true, true, 1.5f, -1.0f},
      {"1x9x33_beta1", 1, 9, 33, true, true, 1.0f, 1.0f},
      {"65x33x771_beta0", 65, 33, 771, false, true, 1.0f, 0.0f},
      {"33x65x771_beta05", 33, 65, 771, true, false, 1.0f, 0.5f},
      {"Gpt2QkvForward_256x2304x768", 256, 2304, 768, false, true, 1.0f, 0.0f},
      {"Gpt2Fc2Forward_256x768x3072", 256, 768, 3072, false, true, 1.0f, 0.0f},
      {"Gpt2FcInputGrad_256x768x3072", 256, 768, 3072, false, false, 1.0f, 0.0f},
      {"Gpt2FcWeightGrad_3072x768x256", 3072, 768, 256, true, false, 1.0f, 1.0f}};
  for (const GemmShape& g : shapes) {
    const std::string ops = std::string(g.trans_a ? "T" : "N") + (g.trans_b ? "T" : "N");
    cases.push_back({"Gemm_" + ops + "_" + g.label, Family::kGemm, false,
                     [g](OpContext& ctx) { RunGemm(ctx, g); }});
  }
  for (const AttentionShape& s : {AttentionShape{"B2S7A3D5", 2, 7, 3, 5},
                                  AttentionShape{"Gpt2_B2S128A12D64", 2, 128, 12, 64}}) {
    cases.push_back({std::string("GemmStridedBatched_Attention_") + s.label, Family::kGemm, false,
                     [s](OpContext& ctx) { RunAttentionGemms(ctx, s); }});
  }
}

// --- Cases: elementwise ops, casts, bias ops, activations ------------------------------------

struct Rows {
  int64_t n, c;
  int64_t numel() const { return n * c; }
  std::string Label() const { return std::to_string(n) + "x" + std::to_string(c); }
};

constexpr Rows kSmallRows{7, 13};

void RunAdd(OpContext& ctx, Rows r) {
  Tensor a = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  Tensor b = ctx.Input({r.numel()}, RandomFloats(r.numel(), 2));  // element counts only
  Tensor out = ctx.Garbage({r.n, r.c});
  ctx.compute().Add(a, b, out);
  ctx.Output("out", out);
  ctx.compute().Add(a, b, a);
  ctx.Output("a_in_place", a);
}

void RunMul(OpContext& ctx, Rows r) {
  Tensor a = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  Tensor b = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 2));
  Tensor out = ctx.Garbage({r.numel()});
  ctx.compute().Mul(a, b, out);
  ctx.Output("out", out);
  ctx.compute().Mul(a, b, b);
  ctx.Output("b_in_place", b);
}

void RunAxpy(OpContext& ctx, Rows r) {
  Tensor x = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  Tensor y = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 2));
  ctx.compute().Axpy(-2.5f, x, y);
  ctx.Output("y", y);
}

void RunScale(OpContext& ctx, Rows r) {
  Tensor x = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  ctx.compute().Scale(0.3f, x);
  ctx.Output("x", x);
}

void RunFill(OpContext& ctx, Rows r) {
  Tensor x = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  ctx.compute().Fill(-1.75f, x);  // a bf16 value: exact in both types
  ctx.Output("x", x);
}

void RunCopy(OpContext& ctx, Rows r) {
  Tensor src = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  Tensor dst = ctx.Garbage({r.numel()});
  ctx.compute().Copy(src, dst);
  ctx.Output("dst", dst);
}

// Values that exercise rounding to bf16: exponents from 2^-20 to 2^20, ties between two bf16
// values (to even: down from 1 + 2^-8, up from 1 + 3·2^-8), a value just above a tie, large
// and tiny normal values, signed zeros.
std::vector<float> CastValues(int64_t n) {
  std::vector<float> values = RandomFloats(n, 1);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::ldexp(values[i], static_cast<int>(i % 41) - 20);
  }
  const float tie = 1.0f + std::ldexp(1.0f, -8);
  values.insert(values.end(),
                {tie, -tie, 1.0f + 3.0f * std::ldexp(1.0f, -8), tie + std::ldexp(1.0f, -20),
                 65504.0f, 3.0e38f, 1e-30f, 0.0f, -0.0f});
  return values;
}

// fp32 → working type → fp32 on the backend; the CPU side of a bf16 case expects RoundToBf16.
void RunCastRoundTrip(OpContext& ctx, int64_t n) {
  const std::vector<float> values = CastValues(n);
  const int64_t count = static_cast<int64_t>(values.size());
  Tensor src = ctx.Fp32({count}, values);
  Tensor working = ctx.Garbage({count});
  Tensor back = ctx.Fp32Garbage({count});
  ctx.compute().Cast(src, working);
  ctx.compute().Cast(working, back);
  ctx.OutputAsStored("round_trip", Download(ctx.compute(), back));
}

void RunAddBias(OpContext& ctx, Rows r) {
  Tensor y = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  Tensor bias = ctx.Input({r.c}, RandomFloats(r.c, 2));
  ctx.compute().AddBias(bias, y);
  ctx.Output("y", y);
}

void RunBiasGrad(OpContext& ctx, Rows r) {
  Tensor dy = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1));
  Tensor dbias = ctx.Input({r.c}, RandomFloats(r.c, 2));  // accumulates onto a nonzero start
  ctx.compute().BiasGrad(dy, dbias);
  ctx.Output("dbias", dbias);
}

void RunActivation(OpContext& ctx, ActivationKind f, Rows r) {
  Tensor x = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1, -4.0f, 4.0f));
  Tensor y = ctx.Garbage({r.n, r.c});
  ctx.compute().Activation(f, x, y);
  ctx.Output("y", y);
  ctx.compute().Activation(f, x, x);
  ctx.Output("x_in_place", x);
}

void RunActivationBackward(OpContext& ctx, ActivationKind f, Rows r) {
  Tensor x = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1, -4.0f, 4.0f));
  Tensor dy = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 2));
  Tensor dx = ctx.Garbage({r.n, r.c});
  ctx.compute().ActivationBackward(f, x, dy, dx);
  ctx.Output("dx", dx);
  ctx.compute().ActivationBackward(f, x, dy, dy);
  ctx.Output("dy_in_place", dy);
}

void RunSwiGlu(OpContext& ctx, Rows r) {
  Tensor gate = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1, -4.0f, 4.0f));
  Tensor up = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 2));
  Tensor out = ctx.Garbage({r.n, r.c});
  ctx.compute().SwiGlu(gate, up, out);
  ctx.Output("out", out);
  ctx.compute().SwiGlu(gate, up, gate);
  ctx.Output("gate_in_place", gate);
}

void RunSwiGluBackward(OpContext& ctx, Rows r) {
  Tensor gate = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1, -4.0f, 4.0f));
  Tensor up = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 2));
  Tensor dout = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 3));
  Tensor dgate = ctx.Garbage({r.n, r.c});
  Tensor dup = ctx.Garbage({r.n, r.c});
  ctx.compute().SwiGluBackward(gate, up, dout, dgate, dup);
  ctx.Output("dgate", dgate);
  ctx.Output("dup", dup);
}

// Adds "<op>_<N>x<C>" for every row shape.
void AddRowCases(std::vector<OpCase>& cases, const std::string& op, Family family,
                 std::initializer_list<Rows> shapes, void (*run)(OpContext&, Rows)) {
  for (Rows r : shapes) {
    cases.push_back(
        {op + "_" + r.Label(), family, false, [run, r](OpContext& ctx) { run(ctx, r); }});
  }
}

void AddActivationCases(std::vector<OpCase>& cases) {
  for (ActivationKind f : {ActivationKind::kGelu, ActivationKind::kSilu}) {
    const std::string name = f == ActivationKind::kGelu ? "Gelu" : "Silu";
    for (Rows r : {kSmallRows, Rows{256, 3072}}) {
      cases.push_back({"Activation" + name + "_" + r.Label(), Family::kElementwise, false,
                       [f, r](OpContext& ctx) { RunActivation(ctx, f, r); }});
      cases.push_back({"ActivationBackward" + name + "_" + r.Label(), Family::kElementwise, false,
                       [f, r](OpContext& ctx) { RunActivationBackward(ctx, f, r); }});
    }
  }
}

void AddElementwiseCases(std::vector<OpCase>& cases) {
  const Rows gpt2{256, 768};
  AddRowCases(cases, "Add", Family::kElementwise, {kSmallRows, gpt2}, RunAdd);
  AddRowCases(cases, "Mul", Family::kElementwise, {kSmallRows}, RunMul);
  AddRowCases(cases, "Axpy", Family::kElementwise, {kSmallRows, gpt2}, RunAxpy);
  AddRowCases(cases, "Scale", Family::kElementwise, {kSmallRows}, RunScale);
  AddRowCases(cases, "Fill", Family::kExact, {kSmallRows}, RunFill);
  AddRowCases(cases, "Copy", Family::kExact, {kSmallRows, gpt2}, RunCopy);
  cases.push_back({"CastRoundTrip_100", Family::kExact, false,
                   [](OpContext& ctx) { RunCastRoundTrip(ctx, 91); }});
  AddRowCases(cases, "AddBias", Family::kElementwise, {kSmallRows, Rows{256, 2304}}, RunAddBias);
  AddRowCases(cases, "BiasGrad", Family::kReduction, {Rows{37, 45}, gpt2}, RunBiasGrad);
  AddActivationCases(cases);
  AddRowCases(cases, "SwiGlu", Family::kElementwise, {kSmallRows, Rows{256, 3072}}, RunSwiGlu);
  AddRowCases(cases, "SwiGluBackward", Family::kElementwise, {kSmallRows, Rows{256, 3072}},
              RunSwiGluBackward);
}

// --- Cases: softmax and norms --------------------------------------------------------------

// Scores in [-8, 8) (peaked rows); in a causal [.., S, S] tensor the masked entries (column >
// row) are NaN, which the softmax must not read.
std::vector<float> Scores(const std::vector<int64_t>& dims, bool causal, uint32_t seed) {
  const size_t cols = static_cast<size_t>(dims.back());
  std::vector<float> x = RandomFloats(NumElements(dims), seed, -8.0f, 8.0f);
  for (size_t i = 0; causal && i < x.size(); ++i) {
    if (i % cols > i / cols % cols) x[i] = kNan;
  }
  return x;
}

void RunSoftmax(OpContext& ctx, const std::vector<int64_t>& dims, bool causal) {
  Tensor x = ctx.Input(dims, Scores(dims, causal, 1));
  Tensor y = ctx.Garbage(dims);
  ctx.compute().Softmax(x, causal, y);
  ctx.Output("y", y);
  ctx.compute().Softmax(x, causal, x);
  ctx.Output("x_in_place", x);
}

// y: softmax rows of random scores (zero past the diagonal when causal).
void RunSoftmaxBackward(OpContext& ctx, const std::vector<int64_t>& dims, bool causal) {
  const std::vector<double> y_values =
      RefSoftmax(ToDouble(Scores(dims, causal, 1)), dims.back(), causal);
  Tensor y = ctx.Input(dims, std::vector<float>(y_values.begin(), y_values.end()));
  Tensor dy = ctx.Input(dims, RandomFloats(NumElements(dims), 2));
  Tensor dx = ctx.Garbage(dims);
  ctx.compute().SoftmaxBackward(y, dy, dx);
  ctx.Output("dx", dx);
  ctx.compute().SoftmaxBackward(y, dy, dy);
  ctx.Output("dy_in_place", dy);
}

std::string DimsLabel(const std::vector<int64_t>& dims) {
  std::string label;
  for (int64_t d : dims) label += (label.empty() ? "" : "x") + std::to_string(d);
  return label;
}

void AddSoftmaxCases(std::vector<OpCase>& cases) {
  struct ScoreShape {
    std::vector<int64_t> dims;
    bool causal;
  };
  const ScoreShape shapes[] = {{{3, 5, 11}, false},
                               {{2, 3, 9, 9}, true},
                               {{32, 1024}, false},
                               {{12, 256, 256}, true}};  // GPT-2 small: 12 heads, S 256
  for (const ScoreShape& s : shapes) {
    const std::string label = (s.causal ? "Causal_" : "_") + DimsLabel(s.dims);
    cases.push_back({"Softmax" + label, Family::kReduction, false,
                     [s](OpContext& ctx) { RunSoftmax(ctx, s.dims, s.causal); }});
    cases.push_back({"SoftmaxBackward" + label, Family::kReduction, false,
                     [s](OpContext& ctx) { RunSoftmaxBackward(ctx, s.dims, s.causal); }});
  }
}

constexpr float kLayerNormEps = 1e-5f;
constexpr float kRmsNormEps = 1e-6f;

// x in [-0.5, 1.5) (rows with a nonzero mean), gamma in [0.5, 1.5), beta in [-1, 1).
struct NormInputs {
  Tensor x, gamma, beta;
};

NormInputs MakeNormInputs(OpContext& ctx, Rows r) {
  return {ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 1, -0.5f, 1.5f)),
          ctx.Input({r.c}, RandomFloats(r.c, 2, 0.5f, 1.5f)),
          ctx.Input({r.c}, RandomFloats(r.c, 3))};
}

void RunLayerNorm(OpContext& ctx, Rows r) {
  NormInputs in = MakeNormInputs(ctx, r);
  Tensor y = ctx.Garbage({r.n, r.c});
  Tensor mean = ctx.Fp32Garbage({r.n}), rstd = ctx.Fp32Garbage({r.n});
  ctx.compute().LayerNorm(in.x, in.gamma, in.beta, kLayerNormEps, y, mean, rstd);
  ctx.Output("y", y);
  ctx.OutputFp32("mean", mean);
  ctx.OutputFp32("rstd", rstd);
}

// Each backend saves its own statistics with LayerNorm, then runs the backward onto nonzero
// dx, dgamma and dbeta.
void RunLayerNormBackward(OpContext& ctx, Rows r) {
  NormInputs in = MakeNormInputs(ctx, r);
  Tensor y = ctx.Garbage({r.n, r.c});
  Tensor mean = ctx.Fp32Garbage({r.n}), rstd = ctx.Fp32Garbage({r.n});
  ctx.compute().LayerNorm(in.x, in.gamma, in.beta, kLayerNormEps, y, mean, rstd);
  Tensor dy = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 4));
  Tensor dx = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 5));
  Tensor dgamma = ctx.Input({r.c}, RandomFloats(r.c, 6));
  Tensor dbeta = ctx.Input({r.c}, RandomFloats(r.c, 7));
  ctx.compute().LayerNormBackward(in.x, in.gamma, mean, rstd, dy, dx, dgamma, dbeta);
  ctx.Output("dx", dx);
  ctx.Output("dgamma", dgamma);
  ctx.Output("dbeta", dbeta);
}

void RunRmsNorm(OpContext& ctx, Rows r) {
  NormInputs in = MakeNormInputs(ctx, r);
  Tensor y = ctx.Garbage({r.n, r.c});
  Tensor rstd = ctx.Fp32Garbage({r.n});
  ctx.compute().RmsNorm(in.x, in.gamma, kRmsNormEps, y, rstd);
  ctx.Output("y", y);
  ctx.OutputFp32("rstd", rstd);
}

void RunRmsNormBackward(OpContext& ctx, Rows r) {
  NormInputs in = MakeNormInputs(ctx, r);
  Tensor y = ctx.Garbage({r.n, r.c});
  Tensor rstd = ctx.Fp32Garbage({r.n});
  ctx.compute().RmsNorm(in.x, in.gamma, kRmsNormEps, y, rstd);
  Tensor dy = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 4));
  Tensor dx = ctx.Input({r.n, r.c}, RandomFloats(r.numel(), 5));
  Tensor dgamma = ctx.Input({r.c}, RandomFloats(r.c, 6));
  ctx.compute().RmsNormBackward(in.x, in.gamma, rstd, dy, dx, dgamma);
  ctx.Output("dx", dx);
  ctx.Output("dgamma", dgamma);
}

void AddNormCases(std::vector<OpCase>& cases) {
  // C = 13 leaves most of a 256-thread row block idle; C = 771 gives threads several columns.
  const std::initializer_list<Rows> shapes = {Rows{5, 13}, Rows{7, 771}, Rows{256, 768}};
  AddRowCases(cases, "LayerNorm", Family::kReduction, shapes, RunLayerNorm);
  AddRowCases(cases, "LayerNormBackward", Family::kReduction, shapes, RunLayerNormBackward);
  AddRowCases(cases, "RmsNorm", Family::kReduction, shapes, RunRmsNorm);
  AddRowCases(cases, "RmsNormBackward", Family::kReduction, shapes, RunRmsNormBackward);
}

// --- Cases: embedding and loss -------------------------------------------------------------

struct EmbeddingShape {
  const char* label;
  int64_t vocab, cols;
  std::vector<int32_t> ids;
};

// 15 ids over a vocabulary of 11: every row, id 3 three times, 7 and 0 twice.
EmbeddingShape SmallEmbedding() {
  return {"V11C13N15", 11, 13, {3, 7, 3, 0, 10, 3, 7, 5, 1, 9, 2, 8, 4, 6, 0}};
}

// GPT-2 small: 256 tokens over the 50257-word table of width 768, with the first and the last
// row and an id repeated three times.
EmbeddingShape Gpt2Embedding() {
  std::vector<int32_t> ids = RandomIds(256, 50257, 4);
  ids[0] = 50256;
  ids[1] = 0;
  ids[2] = ids[100] = ids[200] = 12345;
  return {"Gpt2_V50257C768N256", 50257, 768, std::move(ids)};
}

void RunEmbedding(OpContext& ctx, const EmbeddingShape& e) {
  const int64_t n = static_cast<int64_t>(e.ids.size());
  Tensor table = ctx.Input({e.vocab, e.cols}, RandomFloats(e.vocab * e.cols, 1));
  Tensor ids = ctx.Ids({n}, e.ids);
  Tensor out = ctx.Garbage({n, e.cols});
  ctx.compute().Embedding(ids, table, out);
  ctx.Output("out", out);
}

void RunEmbeddingBackward(OpContext& ctx, const EmbeddingShape& e) {
  const int64_t n = static_cast<int64_t>(e.ids.size());
  Tensor dtable = ctx.Input({e.vocab, e.cols}, RandomFloats(e.vocab * e.cols, 1));
  Tensor ids = ctx.Ids({n}, e.ids);
  Tensor dout = ctx.Input({n, e.cols}, RandomFloats(n * e.cols, 2));
  ctx.compute().EmbeddingBackward(ids, dout, dtable);
  ctx.Output("dtable", dtable);
}

void RunCrossEntropy(OpContext& ctx, int64_t rows, int64_t vocab) {
  Tensor logits = ctx.Input({rows, vocab}, RandomFloats(rows * vocab, 1, -4.0f, 4.0f));
  Tensor targets = ctx.Ids({rows}, RandomIds(rows, static_cast<int32_t>(vocab), 2));
  Tensor probs = ctx.Garbage({rows, vocab});
  Tensor loss = ctx.Fp32Garbage({1});
  ctx.compute().CrossEntropy(logits, targets, probs, loss);
  ctx.Output("probs", probs);
  ctx.OutputFp32("loss", loss);
  ctx.compute().CrossEntropy(logits, targets, logits, loss);
  ctx.Output("probs_in_place", logits);
  ctx.OutputFp32("loss_in_place", loss);
}

void RunCrossEntropyBackward(OpContext& ctx, int64_t rows, int64_t vocab) {
  const std::vector<double> p =
      RefSoftmax(ToDouble(RandomFloats(rows * vocab, 1, -4.0f, 4.0f)), vocab, false);
  Tensor probs = ctx.Input({rows, vocab}, std::vector<float>(p.begin(), p.end()));
  Tensor targets = ctx.Ids({rows}, RandomIds(rows, static_cast<int32_t>(vocab), 2));
  Tensor dlogits = ctx.Garbage({rows, vocab});
  ctx.compute().CrossEntropyBackward(probs, targets, 0.5f, dlogits);
  ctx.Output("dlogits", dlogits);
  ctx.compute().CrossEntropyBackward(probs, targets, 0.5f, probs);
  ctx.Output("probs_in_place", probs);
}

void AddEmbeddingLossCases(std::vector<OpCase>& cases) {
  for (const EmbeddingShape& e : {SmallEmbedding(), Gpt2Embedding()}) {
    cases.push_back({std::string("Embedding_") + e.label, Family::kExact, false,
                     [e](OpContext& ctx) { RunEmbedding(ctx, e); }});
    cases.push_back({std::string("EmbeddingBackward_") + e.label, Family::kScatterAdd, false,
                     [e](OpContext& ctx) { RunEmbeddingBackward(ctx, e); }});
  }
  struct Logits {
    const char* label;
    int64_t rows, vocab;
    Family family;
  };
  for (const Logits& l : {Logits{"15x17", 15, 17, Family::kReduction},
                          Logits{"Gpt2_8x50257", 8, 50257, Family::kWideReduction}}) {
    cases.push_back({std::string("CrossEntropy_") + l.label, l.family, false,
                     [l](OpContext& ctx) { RunCrossEntropy(ctx, l.rows, l.vocab); }});
    cases.push_back({std::string("CrossEntropyBackward_") + l.label, Family::kElementwise, false,
                     [l](OpContext& ctx) { RunCrossEntropyBackward(ctx, l.rows, l.vocab); }});
  }
}

// --- Cases: optimizers (fp32 master buffers) ------------------------------------------------

void RunAdamW(OpContext& ctx, int64_t n) {
  const AdamWConfig config{
      .lr = 1e-2f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.1f};
  Tensor param = ctx.Fp32({n}, RandomFloats(n, 1));
  Tensor m = ctx.Fp32({n}, std::vector<float>(static_cast<size_t>(n)));
  Tensor v = ctx.Fp32({n}, std::vector<float>(static_cast<size_t>(n)));
  for (int64_t step = 1; step <= 3; ++step) {
    Tensor grad = ctx.Fp32({n}, RandomFloats(n, 100 + static_cast<uint32_t>(step)));
    ctx.compute().AdamW(config, step, grad, param, m, v);
  }
  ctx.OutputFp32("param", param);
  ctx.OutputFp32("m", m);
  ctx.OutputFp32("v", v);
}

void RunSgd(OpContext& ctx, int64_t n, float momentum) {
  const SgdConfig config{.lr = 5e-2f, .momentum = momentum, .weight_decay = 0.01f};
  Tensor param = ctx.Fp32({n}, RandomFloats(n, 1));
  Tensor buf;  // undefined without momentum
  if (momentum != 0.0f) buf = ctx.Fp32({n}, std::vector<float>(static_cast<size_t>(n)));
  for (uint32_t step = 1; step <= 3; ++step) {
    Tensor grad = ctx.Fp32({n}, RandomFloats(n, 100 + step));
    ctx.compute().Sgd(config, grad, param, buf);
  }
  ctx.OutputFp32("param", param);
  if (buf.defined()) ctx.OutputFp32("buf", buf);
}

void AddOptimizerCases(std::vector<OpCase>& cases) {
  // 1001: an odd count; 768·3072 + 7: a GPT-2 small MLP weight and a ragged tail.
  for (int64_t n : {int64_t{1001}, int64_t{768 * 3072 + 7}}) {
    const std::string size = std::to_string(n);
    cases.push_back({"AdamW_3Steps_" + size, Family::kOptimizer, true,
                     [n](OpContext& ctx) { RunAdamW(ctx, n); }});
    cases.push_back({"SgdMomentum_3Steps_" + size, Family::kOptimizer, true,
                     [n](OpContext& ctx) { RunSgd(ctx, n, 0.9f); }});
    cases.push_back({"Sgd_3Steps_" + size, Family::kOptimizer, true,
                     [n](OpContext& ctx) { RunSgd(ctx, n, 0.0f); }});
  }
}

// --- The table and the tests -----------------------------------------------------------------

const std::vector<OpCase>& Cases() {
  static const std::vector<OpCase>* const cases = [] {
    auto* all = new std::vector<OpCase>;
    AddGemmCases(*all);
    AddElementwiseCases(*all);
    AddSoftmaxCases(*all);
    AddNormCases(*all);
    AddEmbeddingLossCases(*all);
    AddOptimizerCases(*all);
    return all;
  }();
  return *cases;
}

std::vector<CaseParam> CaseParams() {
  std::vector<CaseParam> params;
  for (const OpCase& op : Cases()) {
    params.push_back({&op, ElementType::kFp32});
    if (!op.fp32_only) params.push_back({&op, ElementType::kBf16});
  }
  return params;
}

// The CUDA backend for the whole run, made on first use and never destroyed (tearing down a
// CUDA context from a static destructor at exit can fail); null, with the reason, without one.
struct CudaBackend {
  std::unique_ptr<Compute> compute;
  std::string error;
};

const CudaBackend& Cuda() {
  static const CudaBackend* const backend = [] {
    auto* made = new CudaBackend;
    StatusOr<std::unique_ptr<Compute>> cuda = MakeCompute({.device = "cuda"});
    if (cuda.ok()) {
      made->compute = std::move(cuda).value();
    } else {
      made->error = cuda.status().message();
    }
    return made;
  }();
  return *backend;
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Cuda().compute == nullptr) GTEST_SKIP() << "no CUDA device: " << Cuda().error;
  }
  Compute& cuda() { return *Cuda().compute; }
};

class CudaOpsTest : public CudaTest, public ::testing::WithParamInterface<CaseParam> {
 protected:
  std::vector<OpOutput> RunOnCuda(const OpCase& op, ElementType type) {
    OpContext ctx(cuda(), type, /*round_to_bf16=*/false);
    op.run(ctx);
    return ctx.TakeOutputs();
  }
  // fp32 on inputs rounded to bf16 in a bf16 case.
  static std::vector<OpOutput> RunOnCpu(const OpCase& op, ElementType type) {
    CpuCompute cpu;
    OpContext ctx(cpu, ElementType::kFp32, /*round_to_bf16=*/type == ElementType::kBf16);
    op.run(ctx);
    return ctx.TakeOutputs();
  }
};

TEST_P(CudaOpsTest, MatchesCpu) {
  const OpCase& op = *GetParam().op;
  const ElementType type = GetParam().type;
  const std::vector<OpOutput> on_cuda = RunOnCuda(op, type);
  EXPECT_EQ(cuda().memory_stats().current_bytes, 0) << "tensors left alive by " << op.name;
  const std::vector<OpOutput> on_cpu = RunOnCpu(op, type);
  ASSERT_EQ(on_cuda.size(), on_cpu.size());
  ASSERT_FALSE(on_cpu.empty()) << op.name << " has no outputs";
  for (size_t i = 0; i < on_cuda.size(); ++i) ExpectAgreement(op, type, on_cuda[i], on_cpu[i]);
}

std::string CaseParamName(const ::testing::TestParamInfo<CaseParam>& param) {
  return param.param.op->name + "_" + ElementTypeName(param.param.type);
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOpsTest, ::testing::ValuesIn(CaseParams()), CaseParamName);

// (current, peak) bytes, relative to the start, after each step of a fixed sequence of
// allocations, moves, views and frees.
std::vector<std::pair<int64_t, int64_t>> AllocationTrace(Compute& compute) {
  compute.ResetPeak();
  const int64_t base = compute.memory_stats().current_bytes;
  std::vector<std::pair<int64_t, int64_t>> trace;
  auto record = [&] {
    const MemoryStats stats = compute.memory_stats();
    trace.emplace_back(stats.current_bytes - base, stats.peak_bytes - base);
  };
  {
    Tensor a = compute.Allocate({3, 5});  // 60 bytes: not a multiple of any rounding
    record();
    Tensor ids = compute.Allocate({7}, ElementType::kInt32);
    record();
    Tensor empty = compute.Allocate({0, 4});
    record();
    {
      Tensor big = compute.Allocate({1000, 3});
      record();
    }
    record();                         // big freed: current drops, peak stays
    Tensor view = a.View(5, {2, 5});  // a view holds no memory
    record();
    compute.ResetPeak();
    record();
    Tensor moved = std::move(a);  // a move neither frees nor allocates
    record();
  }
  record();
  return trace;
}

TEST_F(CudaTest, MemoryAccountingMatchesCpu) {
  CpuCompute cpu;
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {60, 60},    {88, 88}, {88, 88}, {12088, 12088}, {88, 12088},
      {88, 12088}, {88, 88}, {88, 88}, {0, 88}};
  EXPECT_EQ(AllocationTrace(cpu), expected);
  EXPECT_EQ(AllocationTrace(cuda()), expected);
  // bf16 tensors count 2 bytes an element.
  const int64_t before = cuda().memory_stats().current_bytes;
  Tensor half = cuda().Allocate({9}, ElementType::kBf16);
  EXPECT_EQ(cuda().memory_stats().current_bytes - before, 18);
}

// Runs everywhere: the host rounding that the CPU side of every bf16 case relies on.
TEST(RoundToBf16Test, RoundsToNearestEvenAndKeepsSpecialValues) {
  const float ulp = std::ldexp(1.0f, -7);                         // bf16 spacing in [1, 2)
  EXPECT_EQ(RoundToBf16(1.0f + ulp / 2), 1.0f);                   // tie: down to even
  EXPECT_EQ(RoundToBf16(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);     // tie: up to even
  EXPECT_EQ(RoundToBf16(1.0f + ulp / 2 + ulp / 64), 1.0f + ulp);  // above the tie
  EXPECT_EQ(RoundToBf16(-1.0f - ulp / 4), -1.0f);
  EXPECT_EQ(RoundToBf16(0.1f), 0.10009765625f);
  EXPECT_TRUE(std::signbit(RoundToBf16(-0.0f)));
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());  // past the largest bf16
  EXPECT_TRUE(std::isnan(RoundToBf16(kNan)));
  EXPECT_TRUE(std::isnan(RoundToBf16(std::bit_cast<float>(0x7F800001u))));  // low-bit NaN
}

// Runs everywhere: the factory makes a CUDA backend or says why not, naming the flag.
TEST(CudaFactoryTest, MakesCudaOrFailsWithFailedPrecondition) {
  StatusOr<std::unique_ptr<Compute>> cuda = MakeCompute({.device = "cuda"});
  if (cuda.ok()) {
    EXPECT_EQ((*cuda)->Describe().rfind("cuda:", 0), 0u) << (*cuda)->Describe();
    EXPECT_TRUE((*cuda)->Supports(ElementType::kBf16));
    EXPECT_EQ((*cuda)->memory_stats(), MemoryStats{});
  } else {
    EXPECT_EQ(cuda.status().code(), StatusCode::kFailedPrecondition) << cuda.status().message();
    EXPECT_NE(cuda.status().message().find("--device cuda"), std::string::npos)
        << cuda.status().message();
  }
}

}  // namespace
}  // namespace trident
