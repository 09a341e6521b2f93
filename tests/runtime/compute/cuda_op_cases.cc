// The cases of cuda_ops_test (see cuda_op_cases.h): matrix products, elementwise ops, casts,
// bias ops and activations, optimizers; and the table of all cases.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "compute_test_util.h"
#include "cuda_op_cases.h"
#include "cuda_ops_harness.h"

namespace trident {

void AddRowCases(std::vector<OpCase>& cases, const std::string& op, Family family,
                 std::initializer_list<Rows> shapes, void (*run)(OpContext&, Rows)) {
  for (Rows r : shapes) {
    cases.push_back(
        {op + "_" + r.Label(), family, false, [run, r](OpContext& ctx) { run(ctx, r); }});
  }
}

namespace {

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

// Mixed precision's weight gradient: dW (fp32) += dyᵀ·x with dy and x of the case's type, as
// bf16 training accumulates (cuBLAS takes bf16 A and B with an fp32 C; the CPU widens them).
void RunMixedGemm(OpContext& ctx, const GemmShape& g) {
  Tensor dy = ctx.Input({g.k, g.m}, RandomFloats(g.k * g.m, 1));
  Tensor x = ctx.Input({g.k, g.n}, RandomFloats(g.k * g.n, 2));
  Tensor dw = ctx.Fp32({g.m, g.n}, RandomFloats(g.m * g.n, 3));
  ctx.compute().Gemm(true, false, g.alpha, dy, x, g.beta, dw);
  ctx.OutputFp32("dw", dw);
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
  for (const GemmShape& g :
       {GemmShape{"7x5x13", 7, 5, 13, true, false, 1.0f, 1.0f},
        GemmShape{"Gpt2FcWeightGrad_3072x768x256", 3072, 768, 256, true, false, 1.0f, 1.0f}}) {
    cases.push_back({std::string("GemmFp32Accumulator_TN_") + g.label, Family::kGemm, false,
                     [g](OpContext& ctx) { RunMixedGemm(ctx, g); }});
  }
  for (const AttentionShape& s : {AttentionShape{"B2S7A3D5", 2, 7, 3, 5},
                                  AttentionShape{"Gpt2_B2S128A12D64", 2, 128, 12, 64}}) {
    cases.push_back({std::string("GemmStridedBatched_Attention_") + s.label, Family::kGemm, false,
                     [s](OpContext& ctx) { RunAttentionGemms(ctx, s); }});
  }
}

// --- Cases: elementwise ops, casts, bias ops, activations ------------------------------------

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

}  // namespace

// --- The table -----------------------------------------------------------------------------

const std::vector<OpCase>& AllOpCases() {
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

}  // namespace trident
