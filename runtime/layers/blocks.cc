// The GPT block and the MLP block. Legend in layer.h.
//   GPT:  x1 = x + Attention(LN1(x));  y = x1 + Mlp(LN2(x1))      (pre-LN, no dropout)
//   MLP:  y = x + Mlp(x)
// Stash per micro-batch: exactly LayerShapes::ForwardStash (models/layer_stash_shapes.cc), for
// GPT (recompute none) x, LN1 output, x1, LN2 output, qkv, context, fc1 and GELU outputs, the
// softmax output and the LayerNorm statistics (mean, rstd; the cost model leaves them out).
// Selective recompute drops the softmax output and rebuilds it from qkv before backward; full
// keeps only x and reruns the forward (including its tp collectives) before backward.
#include <vector>

#include "runtime/layers/layers_internal.h"

namespace trident {

namespace {

struct NormStash {
  Tensor out_BSH, mean_N, rstd_N;
};

NormStash RunLayerNorm(Compute& compute, const LayerShapes& shapes, const Tensor& x_BSH,
                       OwnedParameter& gamma, OwnedParameter& beta, float eps) {
  const std::vector<int64_t> stat_N = shapes.NormStat(TokensOf(x_BSH));
  NormStash n{compute.Allocate(x_BSH.shape(), x_BSH.type()), compute.Allocate(stat_N),
              compute.Allocate(stat_N)};
  compute.LayerNorm(x_BSH, gamma.value, beta.value, eps, n.out_BSH, n.mean_N, n.rstd_N);
  return n;
}

struct GptStash {
  Tensor x_BSH, mean1_N, rstd1_N, x1_BSH, mean2_N, rstd2_N;
  AttentionStash attn;
  FfnStash ffn;
  int64_t Bytes() const {
    return SumBytes({&x_BSH, &mean1_N, &rstd1_N, &x1_BSH, &mean2_N, &rstd2_N}) + attn.Bytes() +
           ffn.Bytes();
  }
};

class GptBlock final : public Layer {
 public:
  GptBlock(const ModelSpec& model, const LayerShapes& shapes, const LayerContext& context)
      : context_(context), shapes_(shapes), eps_(static_cast<float>(model.norm_eps)) {
    ln1_weight_ = MakeNormParameter(context, shapes.Param("ln1.weight"), InitKind::Ones());
    ln1_bias_ = MakeNormParameter(context, shapes.Param("ln1.bias"), InitKind::Zeros());
    attn_ = MakeAttentionParams(context, shapes, "attn.");
    ln2_weight_ = MakeNormParameter(context, shapes.Param("ln2.weight"), InitKind::Ones());
    ln2_bias_ = MakeNormParameter(context, shapes.Param("ln2.bias"), InitKind::Zeros());
    ffn_ = MakeFfnParams(context, shapes, "mlp.");
  }

  Tensor Forward(int micro_batch, Tensor input, const Tensor* /*targets*/) override {
    GptStash stash;
    stash.x_BSH = std::move(input);
    Tensor y_BSH = Run(stash);
    stash.attn.keys_BS3Hl = Tensor();  // gathered again in backward
    if (context_.recompute == RecomputeMode::kSelective) stash.attn.probs_BAlSS = Tensor();
    if (context_.recompute == RecomputeMode::kFull) {
      Tensor x_BSH = std::move(stash.x_BSH);
      stash = GptStash();
      stash.x_BSH = std::move(x_BSH);
    }
    stashes_.Put(micro_batch, std::move(stash));
    return y_BSH;
  }

  Tensor BackwardInput(int micro_batch, Tensor dy_BSH) override {
    Compute& compute = *context_.compute;
    GptStash& st = stashes_.Get(micro_batch);
    if (!st.x1_BSH.defined()) Run(st);  // full recompute
    if (!st.attn.probs_BAlSS.defined()) AttentionRecompute(context_, shapes_, attn_, st.attn);
    Tensor dx1_BSH = Clone(compute, dy_BSH);
    Tensor dln2_BSH = FfnBackwardInput(context_, ffn_, st.ffn, std::move(dy_BSH));
    compute.LayerNormBackward(st.x1_BSH, ln2_weight_.value, st.mean2_N, st.rstd2_N, dln2_BSH,
                              dx1_BSH, ln2_weight_.grad, ln2_bias_.grad);
    Tensor dx_BSH = Clone(compute, dx1_BSH);
    Tensor dln1_BSH = AttentionBackwardInput(context_, shapes_, attn_, st.attn, std::move(dx1_BSH));
    compute.LayerNormBackward(st.x_BSH, ln1_weight_.value, st.mean1_N, st.rstd1_N, dln1_BSH, dx_BSH,
                              ln1_weight_.grad, ln1_bias_.grad);
    st.x_BSH = Tensor();
    st.x1_BSH = Tensor();
    return dx_BSH;
  }

  void BackwardWeight(int micro_batch) override {
    GptStash& st = stashes_.Get(micro_batch);
    AttentionBackwardWeight(context_, attn_, st.attn);
    FfnBackwardWeight(context_, ffn_, st.ffn);
    stashes_.Erase(micro_batch);
  }

  void Discard(int micro_batch) override { stashes_.Erase(micro_batch); }

  std::vector<Parameter> Parameters() override {
    std::vector<Parameter> out = {ln1_weight_.Ref(), ln1_bias_.Ref()};
    AppendAttentionParams(attn_, out);
    out.push_back(ln2_weight_.Ref());
    out.push_back(ln2_bias_.Ref());
    AppendFfnParams(ffn_, out);
    return out;
  }

  int64_t StashBytes(int micro_batch) const override { return stashes_.Bytes(micro_batch); }

 private:
  // The forward from st.x_BSH, filling every stash entry; returns y.
  Tensor Run(GptStash& st) {
    Compute& compute = *context_.compute;
    NormStash n1 = RunLayerNorm(compute, shapes_, st.x_BSH, ln1_weight_, ln1_bias_, eps_);
    st.mean1_N = std::move(n1.mean_N);
    st.rstd1_N = std::move(n1.rstd_N);
    st.x1_BSH = AttentionForward(context_, shapes_, attn_, std::move(n1.out_BSH), st.attn);
    compute.Add(st.x1_BSH, st.x_BSH, st.x1_BSH);
    NormStash n2 = RunLayerNorm(compute, shapes_, st.x1_BSH, ln2_weight_, ln2_bias_, eps_);
    st.mean2_N = std::move(n2.mean_N);
    st.rstd2_N = std::move(n2.rstd_N);
    Tensor y_BSH = FfnForward(context_, shapes_, ffn_, std::move(n2.out_BSH), st.ffn);
    compute.Add(y_BSH, st.x1_BSH, y_BSH);
    return y_BSH;
  }

  LayerContext context_;
  LayerShapes shapes_;
  float eps_;
  OwnedParameter ln1_weight_, ln1_bias_, ln2_weight_, ln2_bias_;
  AttentionParams attn_;
  FfnParams ffn_;
  StashMap<GptStash> stashes_;
};

class MlpBlock final : public Layer {
 public:
  MlpBlock(const LayerShapes& shapes, const LayerContext& context)
      : context_(context), shapes_(shapes), ffn_(MakeFfnParams(context, shapes, "")) {}

  Tensor Forward(int micro_batch, Tensor input, const Tensor* /*targets*/) override {
    FfnStash stash;
    Tensor y_BSH = FfnForward(context_, shapes_, ffn_, std::move(input), stash);
    context_.compute->Add(y_BSH, stash.in_BSH, y_BSH);
    if (context_.recompute == RecomputeMode::kFull) {
      stash.h_BSFl = Tensor();
      stash.act_BSFl = Tensor();
    }
    stashes_.Put(micro_batch, std::move(stash));
    return y_BSH;
  }

  Tensor BackwardInput(int micro_batch, Tensor dy_BSH) override {
    FfnStash& st = stashes_.Get(micro_batch);
    if (!st.act_BSFl.defined()) FfnRecompute(context_, shapes_, ffn_, st);
    Tensor dskip_BSH = Clone(*context_.compute, dy_BSH);
    Tensor dx_BSH = FfnBackwardInput(context_, ffn_, st, std::move(dy_BSH));
    context_.compute->Add(dx_BSH, dskip_BSH, dx_BSH);
    return dx_BSH;
  }

  void BackwardWeight(int micro_batch) override {
    FfnBackwardWeight(context_, ffn_, stashes_.Get(micro_batch));
    stashes_.Erase(micro_batch);
  }

  void Discard(int micro_batch) override { stashes_.Erase(micro_batch); }

  std::vector<Parameter> Parameters() override {
    std::vector<Parameter> out;
    AppendFfnParams(ffn_, out);
    return out;
  }

  int64_t StashBytes(int micro_batch) const override { return stashes_.Bytes(micro_batch); }

 private:
  LayerContext context_;
  LayerShapes shapes_;
  FfnParams ffn_;
  StashMap<FfnStash> stashes_;
};

}  // namespace

std::unique_ptr<Layer> MakeGptBlock(const ModelSpec& model, const LayerShapes& shapes,
                                    const LayerContext& context) {
  return std::make_unique<GptBlock>(model, shapes, context);
}

std::unique_ptr<Layer> MakeMlpBlock(const LayerShapes& shapes, const LayerContext& context) {
  return std::make_unique<MlpBlock>(shapes, context);
}

}  // namespace trident
