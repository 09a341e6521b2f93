// Compute's public methods for softmax, norms, embedding, loss and optimizer updates: the
// argument checks shared by every backend (see compute.h), then the backend's Do* method on
// the operands it computes on (compute_widen.h); the optimizer updates as maps (compute_maps.h).
#include <cmath>

#include "core/check.h"
#include "runtime/compute/compute.h"
#include "runtime/compute/compute_maps.h"
#include "runtime/compute/compute_widen.h"
#include "runtime/compute/op_check.h"

namespace trident {

void Compute::Softmax(const Tensor& x, const SoftmaxMask& mask, Tensor& y) {
  OpCheck(this, "Softmax")
      .Floats({{"x", x}, {"y", y}})
      .SameNumel({{"x", x}, {"y", y}})
      .LastDim({"y", y}, MatrixCols(x))
      .SameOrDisjoint({"y", y}, {"x", x});
  TRIDENT_CHECK(!mask.causal ||
                (x.rank() >= 2 && mask.offset >= 0 && mask.offset + x.dim(-2) <= x.dim(-1)))
      << "Compute::Softmax: a causal softmax needs [.., R, C] scores with 0 <= offset and "
      << "offset + R <= C, got x " << x.ToString() << " and offset " << mask.offset;
  Widened w(this);
  DoSoftmax(w.In(x), mask, w.Out(y));
}

void Compute::SoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  OpCheck(this, "SoftmaxBackward")
      .Floats({{"y", y}, {"dy", dy}, {"dx", dx}})
      .SameNumel({{"y", y}, {"dy", dy}, {"dx", dx}})
      .LastDim({"dy", dy}, MatrixCols(y))
      .LastDim({"dx", dx}, MatrixCols(y))
      .SameOrDisjoint({"dx", dx}, {"dy", dy})
      .Disjoint({"dx", dx}, {"y", y});
  Widened w(this);
  DoSoftmaxBackward(w.In(y), w.In(dy), w.Out(dx));
}

void Compute::LayerNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C, float eps,
                        Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) {
  const int64_t rows = MatrixRows(x_NC);
  OpCheck(this, "LayerNorm")
      .Floats({{"x_NC", x_NC}, {"gamma_C", gamma_C}, {"beta_C", beta_C}, {"y_NC", y_NC}})
      .OfType(ElementType::kFp32, {{"mean_N", mean_N}, {"rstd_N", rstd_N}})
      .LastDim({"y_NC", y_NC}, MatrixCols(x_NC))
      .SameNumel({{"x_NC", x_NC}, {"y_NC", y_NC}})
      .Numel({"gamma_C", gamma_C}, MatrixCols(x_NC))
      .Numel({"beta_C", beta_C}, MatrixCols(x_NC))
      .Numel({"mean_N", mean_N}, rows)
      .Numel({"rstd_N", rstd_N}, rows)
      .Disjoint({"y_NC", y_NC}, {"x_NC", x_NC})
      .Disjoint({"mean_N", mean_N}, {"rstd_N", rstd_N});
  Widened w(this);
  DoNorm(w.In(x_NC), w.In(gamma_C), w.In(beta_C), eps, w.Out(y_NC), mean_N, rstd_N);
}

void Compute::LayerNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& mean_N,
                                const Tensor& rstd_N, const Tensor& dy_NC, Tensor& dx_NC,
                                Tensor& dgamma_C, Tensor& dbeta_C) {
  const int64_t rows = MatrixRows(x_NC);
  OpCheck(this, "LayerNormBackward")
      .Floats({{"x_NC", x_NC}, {"gamma_C", gamma_C}, {"dy_NC", dy_NC}, {"dx_NC", dx_NC}})
      .Accumulator({"dgamma_C", dgamma_C}, {"gamma_C", gamma_C})
      .Accumulator({"dbeta_C", dbeta_C}, {"dgamma_C", dgamma_C})
      .OfType(ElementType::kFp32, {{"mean_N", mean_N}, {"rstd_N", rstd_N}})
      .SameNumel({{"x_NC", x_NC}, {"dy_NC", dy_NC}, {"dx_NC", dx_NC}})
      .LastDim({"dy_NC", dy_NC}, MatrixCols(x_NC))
      .LastDim({"dx_NC", dx_NC}, MatrixCols(x_NC))
      .SameNumel({{"gamma_C", gamma_C}, {"dgamma_C", dgamma_C}, {"dbeta_C", dbeta_C}})
      .Numel({"gamma_C", gamma_C}, MatrixCols(x_NC))
      .Numel({"mean_N", mean_N}, rows)
      .Numel({"rstd_N", rstd_N}, rows)
      .Disjoint({"dx_NC", dx_NC}, {"x_NC", x_NC})
      .Disjoint({"dx_NC", dx_NC}, {"dy_NC", dy_NC})
      .Disjoint({"dgamma_C", dgamma_C}, {"dbeta_C", dbeta_C});
  Widened w(this, dgamma_C.type() != gamma_C.type() || dbeta_C.type() != gamma_C.type());
  DoNormBackward(w.In(x_NC), w.In(gamma_C), mean_N, rstd_N, w.In(dy_NC), w.Out(dx_NC),
                 w.Out(dgamma_C), w.Out(dbeta_C));
}

void Compute::RmsNorm(const Tensor& x_NC, const Tensor& gamma_C, float eps, Tensor& y_NC,
                      Tensor& rstd_N) {
  OpCheck(this, "RmsNorm")
      .Floats({{"x_NC", x_NC}, {"gamma_C", gamma_C}, {"y_NC", y_NC}})
      .OfType(ElementType::kFp32, {{"rstd_N", rstd_N}})
      .LastDim({"y_NC", y_NC}, MatrixCols(x_NC))
      .SameNumel({{"x_NC", x_NC}, {"y_NC", y_NC}})
      .Numel({"gamma_C", gamma_C}, MatrixCols(x_NC))
      .Numel({"rstd_N", rstd_N}, MatrixRows(x_NC))
      .Disjoint({"y_NC", y_NC}, {"x_NC", x_NC});
  Widened w(this);
  Tensor no_beta, no_mean;  // RMSNorm: no shift, no centering
  DoNorm(w.In(x_NC), w.In(gamma_C), no_beta, eps, w.Out(y_NC), no_mean, rstd_N);
}

void Compute::RmsNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& rstd_N,
                              const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C) {
  OpCheck(this, "RmsNormBackward")
      .Floats({{"x_NC", x_NC}, {"gamma_C", gamma_C}, {"dy_NC", dy_NC}, {"dx_NC", dx_NC}})
      .Accumulator({"dgamma_C", dgamma_C}, {"gamma_C", gamma_C})
      .OfType(ElementType::kFp32, {{"rstd_N", rstd_N}})
      .SameNumel({{"x_NC", x_NC}, {"dy_NC", dy_NC}, {"dx_NC", dx_NC}})
      .LastDim({"dy_NC", dy_NC}, MatrixCols(x_NC))
      .LastDim({"dx_NC", dx_NC}, MatrixCols(x_NC))
      .SameNumel({{"gamma_C", gamma_C}, {"dgamma_C", dgamma_C}})
      .Numel({"gamma_C", gamma_C}, MatrixCols(x_NC))
      .Numel({"rstd_N", rstd_N}, MatrixRows(x_NC))
      .Disjoint({"dx_NC", dx_NC}, {"x_NC", x_NC})
      .Disjoint({"dx_NC", dx_NC}, {"dy_NC", dy_NC});
  Widened w(this, dgamma_C.type() != gamma_C.type());
  Tensor no_mean, no_dbeta;
  DoNormBackward(w.In(x_NC), w.In(gamma_C), no_mean, rstd_N, w.In(dy_NC), w.Out(dx_NC),
                 w.Out(dgamma_C), no_dbeta);
}

void Compute::Embedding(const Tensor& ids_N, const Tensor& table_VC, Tensor& out_NC) {
  OpCheck(this, "Embedding")
      .OfType(ElementType::kInt32, {{"ids_N", ids_N}})
      .Floats({{"table_VC", table_VC}, {"out_NC", out_NC}})
      .LastDim({"out_NC", out_NC}, MatrixCols(table_VC))
      .Numel({"out_NC", out_NC}, ids_N.numel() * MatrixCols(table_VC))
      .Disjoint({"out_NC", out_NC}, {"table_VC", table_VC});
  Widened w(this);
  DoEmbedding(ids_N, w.In(table_VC), w.Out(out_NC));
}

void Compute::EmbeddingBackward(const Tensor& ids_N, const Tensor& dout_NC, Tensor& dtable_VC) {
  OpCheck(this, "EmbeddingBackward")
      .OfType(ElementType::kInt32, {{"ids_N", ids_N}})
      .Floats({{"dout_NC", dout_NC}})
      .Accumulator({"dtable_VC", dtable_VC}, {"dout_NC", dout_NC})
      .LastDim({"dout_NC", dout_NC}, MatrixCols(dtable_VC))
      .Numel({"dout_NC", dout_NC}, ids_N.numel() * MatrixCols(dtable_VC))
      .Disjoint({"dtable_VC", dtable_VC}, {"dout_NC", dout_NC});
  Widened w(this, dtable_VC.type() != dout_NC.type());
  DoEmbeddingBackward(ids_N, w.In(dout_NC), w.Out(dtable_VC));
}

void Compute::CrossEntropy(const Tensor& logits_NV, const Tensor& targets_N, Tensor& probs_NV,
                           Tensor& loss_1) {
  TRIDENT_CHECK(MatrixRows(logits_NV) > 0 && MatrixCols(logits_NV) > 0)
      << "Compute::CrossEntropy: the mean loss needs at least one row of one class, got "
         "logits_NV "
      << logits_NV.ToString();
  OpCheck(this, "CrossEntropy")
      .Floats({{"logits_NV", logits_NV}, {"probs_NV", probs_NV}})
      .OfType(ElementType::kInt32, {{"targets_N", targets_N}})
      .OfType(ElementType::kFp32, {{"loss_1", loss_1}})
      .SameNumel({{"logits_NV", logits_NV}, {"probs_NV", probs_NV}})
      .LastDim({"probs_NV", probs_NV}, MatrixCols(logits_NV))
      .Numel({"targets_N", targets_N}, MatrixRows(logits_NV))
      .Numel({"loss_1", loss_1}, 1)
      .SameOrDisjoint({"probs_NV", probs_NV}, {"logits_NV", logits_NV})
      .Disjoint({"loss_1", loss_1}, {"probs_NV", probs_NV})
      .Disjoint({"loss_1", loss_1}, {"logits_NV", logits_NV});
  Widened w(this);
  DoCrossEntropy(w.In(logits_NV), targets_N, w.Out(probs_NV), loss_1);
}

void Compute::CrossEntropyBackward(const Tensor& probs_NV, const Tensor& targets_N, float dloss,
                                   Tensor& dlogits_NV) {
  OpCheck(this, "CrossEntropyBackward")
      .Floats({{"probs_NV", probs_NV}, {"dlogits_NV", dlogits_NV}})
      .OfType(ElementType::kInt32, {{"targets_N", targets_N}})
      .SameNumel({{"probs_NV", probs_NV}, {"dlogits_NV", dlogits_NV}})
      .LastDim({"dlogits_NV", dlogits_NV}, MatrixCols(probs_NV))
      .Numel({"targets_N", targets_N}, MatrixRows(probs_NV))
      .SameOrDisjoint({"dlogits_NV", dlogits_NV}, {"probs_NV", probs_NV});
  Widened w(this);
  DoCrossEntropyBackward(w.In(probs_NV), targets_N, dloss, w.Out(dlogits_NV));
}

void Compute::AdamW(const AdamWConfig& config, int64_t step, const Tensor& grad, Tensor& param,
                    Tensor& m, Tensor& v) {
  TRIDENT_CHECK(step >= 1) << "Compute::AdamW: step " << step << " (the first step is 1)";
  OpCheck(this, "AdamW")
      .Floats({{"param", param}, {"grad", grad}, {"m", m}, {"v", v}})
      .SameNumel({{"param", param}, {"grad", grad}, {"m", m}, {"v", v}})
      .Disjoint({"param", param}, {"grad", grad})
      .Disjoint({"param", param}, {"m", m})
      .Disjoint({"param", param}, {"v", v})
      .Disjoint({"m", m}, {"v", v})
      .Disjoint({"m", m}, {"grad", grad})
      .Disjoint({"v", v}, {"grad", grad});
  const auto correction = [step](float beta) {
    return static_cast<float>(1.0 - std::pow(double{beta}, static_cast<double>(step)));
  };
  Widened w(this);
  RunMap({AdamWMap{config, correction(config.beta1), correction(config.beta2)}},
         {&w.In(grad), &w.Out(param), &w.Out(m), &w.Out(v)});
}

void Compute::Sgd(const SgdConfig& config, const Tensor& grad, Tensor& param, Tensor& buf) {
  OpCheck(this, "Sgd")
      .Floats({{"param", param}, {"grad", grad}})
      .SameNumel({{"param", param}, {"grad", grad}})
      .Disjoint({"param", param}, {"grad", grad});
  if (config.momentum != 0.0f || buf.defined()) {
    OpCheck(this, "Sgd")
        .Floats({{"param", param}, {"buf", buf}})
        .SameNumel({{"param", param}, {"buf", buf}})
        .Disjoint({"buf", buf}, {"param", param})
        .Disjoint({"buf", buf}, {"grad", grad});
  }
  Widened w(this);
  if (buf.defined()) {
    RunMap({SgdMomentumMap{config}}, {&w.In(grad), &w.Out(param), &w.Out(buf)});
  } else {
    RunMap({SgdMap{config}}, {&w.In(grad), &w.Out(param)});
  }
}

}  // namespace trident
