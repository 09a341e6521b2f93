// The cases of cuda_ops_test (see cuda_op_cases.h): softmax and norms, embedding and loss.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compute_test_util.h"
#include "cuda_op_cases.h"
#include "cuda_ops_harness.h"

namespace trident {
namespace {

// --- Cases: softmax and norms --------------------------------------------------------------

// One softmax case: the scores' shape, and for a causal one the mask's offset (row i of each
// [R, C] matrix keeps columns <= i + offset).
struct ScoreShape {
  std::vector<int64_t> dims;
  bool causal = false;
  int64_t offset = 0;
  int64_t Rows() const { return dims[dims.size() - 2]; }
};

// Scores in [-8, 8) (peaked rows); in a causal tensor the masked entries (column > row +
// offset) are NaN, which the softmax must not read.
std::vector<float> Scores(const ScoreShape& s, uint32_t seed) {
  const size_t cols = static_cast<size_t>(s.dims.back());
  std::vector<float> x = RandomFloats(NumElements(s.dims), seed, -8.0f, 8.0f);
  for (size_t i = 0; s.causal && i < x.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i / cols) % s.Rows();
    if (static_cast<int64_t>(i % cols) > row + s.offset) x[i] = kNan;
  }
  return x;
}

void RunSoftmax(OpContext& ctx, const ScoreShape& s) {
  Tensor x = ctx.Input(s.dims, Scores(s, 1));
  Tensor y = ctx.Garbage(s.dims);
  ctx.compute().Softmax(x, MaskOf(s.causal, s.offset), y);
  ctx.Output("y", y);
  ctx.compute().Softmax(x, MaskOf(s.causal, s.offset), x);
  ctx.Output("x_in_place", x);
}

// y: softmax rows of random scores (zero past the mask when causal).
void RunSoftmaxBackward(OpContext& ctx, const ScoreShape& s) {
  const std::vector<int64_t>& dims = s.dims;
  const std::vector<double> y_values =
      RefSoftmax(ToDouble(Scores(s, 1)), dims.back(), s.causal, s.Rows(), s.offset);
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

}  // namespace

void AddSoftmaxCases(std::vector<OpCase>& cases) {
  const ScoreShape shapes[] = {
      {{3, 5, 11}, false},
      {{2, 3, 9, 9}, true},
      {{32, 1024}, false},
      {{12, 256, 256}, true},     // GPT-2 small: 12 heads, S 256
      {{2, 3, 4, 12}, true, 8}};  // a context-parallel chunk: rows at positions 8..11
  for (const ScoreShape& s : shapes) {
    const std::string label = (s.causal ? "Causal_" : "_") + DimsLabel(s.dims) +
                              (s.offset > 0 ? "_from" + std::to_string(s.offset) : "");
    cases.push_back({"Softmax" + label, Family::kReduction, false,
                     [s](OpContext& ctx) { RunSoftmax(ctx, s); }});
    cases.push_back({"SoftmaxBackward" + label, Family::kReduction, false,
                     [s](OpContext& ctx) { RunSoftmaxBackward(ctx, s); }});
  }
}

namespace {

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

}  // namespace

void AddNormCases(std::vector<OpCase>& cases) {
  // C = 13 leaves most of a 256-thread row block idle; C = 771 gives threads several columns.
  const std::initializer_list<Rows> shapes = {Rows{5, 13}, Rows{7, 771}, Rows{256, 768}};
  AddRowCases(cases, "LayerNorm", Family::kReduction, shapes, RunLayerNorm);
  AddRowCases(cases, "LayerNormBackward", Family::kReduction, shapes, RunLayerNormBackward);
  AddRowCases(cases, "RmsNorm", Family::kReduction, shapes, RunRmsNorm);
  AddRowCases(cases, "RmsNormBackward", Family::kReduction, shapes, RunRmsNormBackward);
}

namespace {

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

}  // namespace

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

}  // namespace trident
