// Every backward op against central differences of its forward. The loss is
// L = Σ w ⊙ y for random weights w (so the backward op gets dy = w), evaluated by the
// double-precision reference of the forward; the backward op runs in fp32 on the backend.
//
// Tolerance 1e-4 (relative above 1, absolute below): the differences use h = 1e-5 in double,
// so their truncation error (h²/6 · |L'''| ≈ 1e-10 · O(10)) and rounding error
// (1e-16 · |L| / h ≈ 1e-10) are negligible; the fp32 gradient sums at most ~40 terms of
// size O(1), an error of at most about 40 · 6e-8 · 40 ≈ 1e-4 in the worst case and ~1e-6 in
// practice. A wrong term or factor is off by far more. Accumulating outputs start from
// random values r, and the test compares their change.
#include <gtest/gtest.h>

#include <tuple>

#include "compute_test_util.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

constexpr double kTol = 1e-4;
using Fn = std::function<double(const std::vector<double>&)>;

// out − start, elementwise: what an accumulating op added.
std::vector<float> Added(const std::vector<float>& out, const std::vector<float>& start) {
  std::vector<float> added(out.size());
  for (size_t i = 0; i < out.size(); ++i) added[i] = out[i] - start[i];
  return added;
}

class GradientTest : public ::testing::Test {
 protected:
  CpuCompute compute_;
};

TEST_F(GradientTest, Activations) {
  const std::vector<float> x = RandomFloats(2 * 3 * 13, 1, -3.0f, 3.0f);
  const std::vector<float> w = RandomFloats(x.size(), 2);
  Tensor x_t = Upload(compute_, {2, 3, 13}, x);
  for (ActivationKind f : {ActivationKind::kGelu, ActivationKind::kSilu}) {
    Tensor dx_t = Upload(compute_, {2, 3, 13}, w);
    compute_.ActivationBackward(f, x_t, dx_t, dx_t);  // dx over dy
    const Fn loss = [&](const std::vector<double>& xs) {
      double sum = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        sum += w[i] * (f == ActivationKind::kGelu ? RefGelu(xs[i]) : RefSilu(xs[i]));
      }
      return sum;
    };
    ExpectNear(Download(compute_, dx_t), NumericGradient(loss, ToDouble(x)), kTol,
               f == ActivationKind::kGelu ? "dGelu" : "dSilu");
  }
}

TEST_F(GradientTest, SwiGlu) {
  const std::vector<float> gate = RandomFloats(7 * 13, 3, -3.0f, 3.0f);
  const std::vector<float> up = RandomFloats(gate.size(), 4), w = RandomFloats(gate.size(), 5);
  Tensor gate_t = Upload(compute_, {7, 13}, gate), up_t = Upload(compute_, {7, 13}, up);
  Tensor w_t = Upload(compute_, {7, 13}, w);
  Tensor dgate = compute_.Allocate({7, 13}), dup = compute_.Allocate({7, 13});
  compute_.SwiGluBackward(gate_t, up_t, w_t, dgate, dup);
  auto loss = [&](const std::vector<double>& g, const std::vector<double>& u) {
    double sum = 0;
    for (size_t i = 0; i < g.size(); ++i) sum += w[i] * RefSilu(g[i]) * u[i];
    return sum;
  };
  const Fn by_gate = [&](const std::vector<double>& g) { return loss(g, ToDouble(up)); };
  const Fn by_up = [&](const std::vector<double>& u) { return loss(ToDouble(gate), u); };
  ExpectNear(Download(compute_, dgate), NumericGradient(by_gate, ToDouble(gate)), kTol, "dgate");
  ExpectNear(Download(compute_, dup), NumericGradient(by_up, ToDouble(up)), kTol, "dup");
}

TEST_F(GradientTest, BiasGradOfAddBias) {
  const std::vector<float> w = RandomFloats(2 * 3 * 13, 6), start = RandomFloats(13, 7);
  Tensor w_t = Upload(compute_, {2, 3, 13}, w);
  Tensor dbias = Upload(compute_, {13}, start);
  compute_.BiasGrad(w_t, dbias);
  const Fn loss = [&](const std::vector<double>& bias) {  // L = Σ w ⊙ (y + bias), y = 0
    double sum = 0;
    for (size_t i = 0; i < w.size(); ++i) sum += w[i] * bias[i % 13];
    return sum;
  };
  ExpectNear(Added(Download(compute_, dbias), start),
             NumericGradient(loss, std::vector<double>(13, 0.5)), kTol, "dbias");
}

TEST_F(GradientTest, Softmax) {
  // Square scores, plain and causal, and a causal block of 3 rows at positions 4..6 of 7 keys.
  for (auto [causal, rows, offset] : {std::tuple{false, 5, 0}, {true, 5, 0}, {true, 3, 4}}) {
    const int64_t cols = rows + offset;
    const std::vector<int64_t> dims = {2, 3, rows, cols};
    const std::vector<float> x = RandomFloats(2 * 3 * rows * cols, 8, -3.0f, 3.0f);
    const std::vector<float> w = RandomFloats(x.size(), 9);
    Tensor x_t = Upload(compute_, dims, x), y_t = compute_.Allocate(dims);
    Tensor dx_t = Upload(compute_, dims, w);
    compute_.Softmax(x_t, MaskOf(causal, offset), y_t);
    compute_.SoftmaxBackward(y_t, dx_t, dx_t);  // dx over dy
    const Fn loss = [&](const std::vector<double>& xs) {
      return Dot(ToDouble(w), RefSoftmax(xs, cols, causal, rows, offset));
    };
    ExpectNear(Download(compute_, dx_t), NumericGradient(loss, ToDouble(x)), kTol,
               causal ? "causal dsoftmax" : "dsoftmax");
  }
}

TEST_F(GradientTest, LayerNorm) {
  const std::vector<float> x = RandomFloats(2 * 3 * 13, 10, -2.0f, 3.0f);
  const std::vector<float> gamma = RandomFloats(13, 11), beta = RandomFloats(13, 12);
  const std::vector<float> w = RandomFloats(x.size(), 13);
  const std::vector<float> dx0 = RandomFloats(x.size(), 14), dg0 = RandomFloats(13, 15);
  const std::vector<float> db0 = RandomFloats(13, 16);
  Tensor x_t = Upload(compute_, {2, 3, 13}, x), w_t = Upload(compute_, {2, 3, 13}, w);
  Tensor gamma_t = Upload(compute_, {13}, gamma), beta_t = Upload(compute_, {13}, beta);
  Tensor y_t = compute_.Allocate({2, 3, 13}), mean = compute_.Allocate({6});
  Tensor rstd = compute_.Allocate({6});
  Tensor dx = Upload(compute_, {2, 3, 13}, dx0), dgamma = Upload(compute_, {13}, dg0);
  Tensor dbeta = Upload(compute_, {13}, db0);
  compute_.LayerNorm(x_t, gamma_t, beta_t, 1e-5f, y_t, mean, rstd);
  compute_.LayerNormBackward(x_t, gamma_t, mean, rstd, w_t, dx, dgamma, dbeta);
  const std::vector<double> xd = ToDouble(x), gd = ToDouble(gamma), bd = ToDouble(beta);
  const std::vector<double> wd = ToDouble(w);
  const Fn by_x = [&](const std::vector<double>& v) {
    return Dot(wd, RefLayerNorm(v, gd, bd, 1e-5));
  };
  const Fn by_g = [&](const std::vector<double>& v) {
    return Dot(wd, RefLayerNorm(xd, v, bd, 1e-5));
  };
  const Fn by_b = [&](const std::vector<double>& v) {
    return Dot(wd, RefLayerNorm(xd, gd, v, 1e-5));
  };
  ExpectNear(Added(Download(compute_, dx), dx0), NumericGradient(by_x, xd), kTol, "LN dx");
  ExpectNear(Added(Download(compute_, dgamma), dg0), NumericGradient(by_g, gd), kTol, "LN dgamma");
  ExpectNear(Added(Download(compute_, dbeta), db0), NumericGradient(by_b, bd), kTol, "LN dbeta");
}

TEST_F(GradientTest, RmsNorm) {
  const std::vector<float> x = RandomFloats(2 * 3 * 13, 17, -2.0f, 3.0f);
  const std::vector<float> gamma = RandomFloats(13, 18), w = RandomFloats(x.size(), 19);
  const std::vector<float> dx0 = RandomFloats(x.size(), 20), dg0 = RandomFloats(13, 21);
  Tensor x_t = Upload(compute_, {2, 3, 13}, x), w_t = Upload(compute_, {2, 3, 13}, w);
  Tensor gamma_t = Upload(compute_, {13}, gamma);
  Tensor y_t = compute_.Allocate({2, 3, 13}), rstd = compute_.Allocate({2, 3});
  Tensor dx = Upload(compute_, {2, 3, 13}, dx0), dgamma = Upload(compute_, {13}, dg0);
  compute_.RmsNorm(x_t, gamma_t, 1e-6f, y_t, rstd);
  compute_.RmsNormBackward(x_t, gamma_t, rstd, w_t, dx, dgamma);
  const std::vector<double> xd = ToDouble(x), gd = ToDouble(gamma), wd = ToDouble(w);
  const Fn by_x = [&](const std::vector<double>& v) { return Dot(wd, RefRmsNorm(v, gd, 1e-6)); };
  const Fn by_g = [&](const std::vector<double>& v) { return Dot(wd, RefRmsNorm(xd, v, 1e-6)); };
  ExpectNear(Added(Download(compute_, dx), dx0), NumericGradient(by_x, xd), kTol, "RMS dx");
  ExpectNear(Added(Download(compute_, dgamma), dg0), NumericGradient(by_g, gd), kTol, "RMS dgamma");
}

TEST_F(GradientTest, EmbeddingScatterAddsRepeatedIds) {
  const int64_t vocab = 8, cols = 13;
  const std::vector<int32_t> ids = {3, 1, 3, 0, 3, 6, 1};  // 3 three times; 2, 4, 5, 7 unused
  const std::vector<float> table = RandomFloats(vocab * cols, 22);
  const std::vector<float> w = RandomFloats(7 * cols, 23), start = RandomFloats(vocab * cols, 24);
  Tensor ids_t = UploadIds(compute_, {7}, ids), w_t = Upload(compute_, {7, cols}, w);
  Tensor dtable = Upload(compute_, {vocab, cols}, start);
  compute_.EmbeddingBackward(ids_t, w_t, dtable);
  const Fn loss = [&](const std::vector<double>& t) {
    return Dot(ToDouble(w), RefEmbedding(ids, t, cols));
  };
  ExpectNear(Added(Download(compute_, dtable), start), NumericGradient(loss, ToDouble(table)), kTol,
             "dtable");
}

TEST_F(GradientTest, CrossEntropy) {
  const int64_t rows = 7, vocab = 11;
  const float dloss = 0.25f;  // as when the objective averages 4 micro-batches
  const std::vector<float> logits = RandomFloats(rows * vocab, 25, -4.0f, 4.0f);
  const std::vector<int32_t> targets = RandomIds(rows, vocab, 26);
  Tensor logits_t = Upload(compute_, {rows, vocab}, logits);
  Tensor targets_t = UploadIds(compute_, {rows}, targets);
  Tensor probs = compute_.Allocate({rows, vocab}), loss_1 = compute_.Allocate({1});
  compute_.CrossEntropy(logits_t, targets_t, probs, loss_1);
  compute_.CrossEntropyBackward(probs, targets_t, dloss, probs);  // dlogits over probs
  const Fn loss = [&](const std::vector<double>& v) {
    return dloss * RefCrossEntropy(v, vocab, targets);
  };
  ExpectNear(Download(compute_, probs), NumericGradient(loss, ToDouble(logits)), kTol, "dlogits");
}

}  // namespace
}  // namespace trident
