// The final norm and the LM head. Legend in layer.h.
//   final_norm  y = LayerNorm(x) or RMSNorm(x), per ModelSpec::norm; weights whole on every
//               rank. Stash: x (e·BSH, as the cost model) plus the fp32 statistics (mean and
//               rstd, or rstd: 4 or 8 bytes a token, which the cost model leaves out).
//   lm_head     logits_BSV = x·Wᵀ, loss_1 = mean over B·S tokens of −log softmax[target].
//               Stash: x (e·BSH) and the softmax probabilities, overwritten in place by the
//               logits' gradient (e·B·S·V), as the cost model; targets are the caller's.
// Under tp > 1 the head is vocabulary-parallel (rank r holds the rows of its VocabShard of W and
// those logit columns) and its loss is vocab_parallel_loss.cc's; the input gradient is
// all-reduced. Under sequence parallelism the final norm runs on this rank's S/t tokens, the
// head gathers its input (TpGather; again for the weight gradient, as it stashes its share)
// and reduce-scatters the input gradient (TpReduce). Under context parallelism the loss is the
// mean over the cp group of the ranks' means (an all-reduce of one value), so each rank's
// backward scales dloss by 1/cp. A tied head uses LayerContext::tied_weight and
// holds no parameters (layer.h).
#include <span>
#include <vector>

#include "runtime/layers/layers_internal.h"

namespace trident {

namespace {

struct NormStash {
  Tensor x_BSH, mean_N, rstd_N;
  int64_t Bytes() const { return SumBytes({&x_BSH, &mean_N, &rstd_N}); }
};

class FinalNorm final : public Layer {
 public:
  FinalNorm(const ModelSpec& model, const LayerShapes& shapes, const LayerContext& context)
      : context_(context), shapes_(shapes), eps_(static_cast<float>(model.norm_eps)) {
    weight_ = MakeNormParameter(context, shapes.Param("weight"), InitKind::Ones());
    if (shapes.layer_norm) {
      bias_ = MakeNormParameter(context, shapes.Param("bias"), InitKind::Zeros());
    }
  }

  Tensor Forward(int micro_batch, Tensor x_BSH, const Tensor* /*targets*/) override {
    Compute& compute = *context_.compute;
    const std::vector<int64_t> stat_N = shapes_.NormStat(TokensOf(x_BSH));
    NormStash st;
    st.rstd_N = compute.Allocate(stat_N);
    Tensor y_BSH = compute.Allocate(x_BSH.shape(), x_BSH.type());
    if (shapes_.layer_norm) {
      st.mean_N = compute.Allocate(stat_N);
      compute.LayerNorm(x_BSH, weight_.value, bias_.value, eps_, y_BSH, st.mean_N, st.rstd_N);
    } else {
      compute.RmsNorm(x_BSH, weight_.value, eps_, y_BSH, st.rstd_N);
    }
    st.x_BSH = std::move(x_BSH);
    stashes_.Put(micro_batch, std::move(st));
    return y_BSH;
  }

  Tensor BackwardInput(int micro_batch, Tensor dy_BSH) override {
    Compute& compute = *context_.compute;
    NormStash& st = stashes_.Get(micro_batch);
    Tensor dx_BSH =
        compute.Allocate(st.x_BSH.shape(), st.x_BSH.type());  // zero: the norms' dx accumulates
    if (shapes_.layer_norm) {
      compute.LayerNormBackward(st.x_BSH, weight_.value, st.mean_N, st.rstd_N, dy_BSH, dx_BSH,
                                weight_.grad, bias_.grad);
    } else {
      compute.RmsNormBackward(st.x_BSH, weight_.value, st.rstd_N, dy_BSH, dx_BSH, weight_.grad);
    }
    stashes_.Erase(micro_batch);
    stashes_.Put(micro_batch, NormStash());  // nothing left for BackwardWeight
    return dx_BSH;
  }

  void BackwardWeight(int micro_batch) override {
    stashes_.Get(micro_batch);  // checks the order of calls
    stashes_.Erase(micro_batch);
  }

  void Discard(int micro_batch) override { stashes_.Erase(micro_batch); }

  std::vector<Parameter> Parameters() override {
    std::vector<Parameter> out = {weight_.Ref()};
    if (shapes_.layer_norm) out.push_back(bias_.Ref());
    return out;
  }

  int64_t StashBytes(int micro_batch) const override { return stashes_.Bytes(micro_batch); }

 private:
  LayerContext context_;
  LayerShapes shapes_;
  float eps_;
  OwnedParameter weight_;
  OwnedParameter bias_;  // LayerNorm only
  StashMap<NormStash> stashes_;
};

struct HeadStash {
  Tensor x_BSH;
  Tensor probs_BSV;  // softmax, then (after BackwardInput) the logits' gradient
  const Tensor* targets_BS = nullptr;
  int64_t Bytes() const { return SumBytes({&x_BSH, &probs_BSV}); }
};

class LmHead final : public Layer {
 public:
  LmHead(const ModelSpec& model, const LayerShapes& shapes, const LayerContext& context)
      : context_(context), shapes_(shapes) {
    if (model.tied_embeddings) {
      TRIDENT_CHECK(context.tied_weight != nullptr && context.tied_weight_grad != nullptr)
          << "a tied LM head needs LayerContext::tied_weight and tied_weight_grad (the "
             "embedding's token table and its gradient)";
      weight_ = context.tied_weight;
      weight_grad_ = context.tied_weight_grad;
    } else {
      own_ = MakeParameter(context, shapes.Param("weight"), WeightInit());
      TRIDENT_CHECK(shapes.vocab_shard.Rows() > 0) << "tp " << context.tp_size << " leaves rank "
                                                   << context.tp_rank << " no vocabulary rows";
      weight_ = &own_.value;
      weight_grad_ = &own_.grad;
    }
  }

  Tensor Forward(int micro_batch, Tensor x_BSH, const Tensor* targets_BS) override {
    Compute& compute = *context_.compute;
    TRIDENT_CHECK(targets_BS != nullptr) << "the LM head needs targets";
    HeadStash st;
    st.targets_BS = targets_BS;
    const Tensor whole_BSH = TpGatherKept(context_, x_BSH);
    st.probs_BSV = compute.Allocate(shapes_.Logits(TokensOf(whole_BSH)), whole_BSH.type());
    LinearForward(compute, whole_BSH, *weight_, nullptr, st.probs_BSV);
    Tensor loss_1 = compute.Allocate({1});
    if (context_.tp_size == 1) {
      compute.CrossEntropy(st.probs_BSV, *targets_BS, st.probs_BSV, loss_1);
    } else {
      compute.Fill(
          VocabParallelCrossEntropy(context_, *targets_BS, shapes_.vocab_shard, st.probs_BSV),
          loss_1);
    }
    if (context_.cp_size > 1) MeanOverCp(loss_1);
    st.x_BSH = std::move(x_BSH);
    stashes_.Put(micro_batch, std::move(st));
    return loss_1;
  }

  Tensor BackwardInput(int micro_batch, Tensor dloss_1) override {
    Compute& compute = *context_.compute;
    HeadStash& st = stashes_.Get(micro_batch);
    float dloss = 0.0f;
    compute.CopyToHost(dloss_1, std::span<float>(&dloss, 1));
    dloss /= static_cast<float>(context_.cp_size);  // this rank's tokens' share of the mean
    if (context_.tp_size == 1) {
      compute.CrossEntropyBackward(st.probs_BSV, *st.targets_BS, dloss, st.probs_BSV);
    } else {
      VocabParallelCrossEntropyBackward(context_, *st.targets_BS, shapes_.vocab_shard, dloss,
                                        st.probs_BSV);
    }
    Tensor dx_BSH = compute.Allocate(shapes_.Hidden(TokensOf(st.probs_BSV)), st.probs_BSV.type());
    LinearBackwardInput(compute, st.probs_BSV, *weight_, dx_BSH);
    return TpReduce(context_, std::move(dx_BSH));
  }

  void BackwardWeight(int micro_batch) override {
    HeadStash& st = stashes_.Get(micro_batch);
    LinearBackwardWeight(*context_.compute, TpGatherKept(context_, st.x_BSH), st.probs_BSV,
                         *weight_grad_, nullptr);
    stashes_.Erase(micro_batch);
  }

  void Discard(int micro_batch) override { stashes_.Erase(micro_batch); }

  std::vector<Parameter> Parameters() override {
    if (context_.tied_weight != nullptr) return {};
    return {own_.Ref()};
  }

  int64_t StashBytes(int micro_batch) const override { return stashes_.Bytes(micro_batch); }

 private:
  // The micro-batch's loss: the mean of the cp ranks' (equal token counts).
  void MeanOverCp(Tensor& loss_1) {
    Compute& compute = *context_.compute;
    float loss = 0.0f;
    compute.CopyToHost(loss_1, std::span<float>(&loss, 1));
    const Status status = context_.cp_comm->AllReduceSum(std::span<float>(&loss, 1));
    TRIDENT_CHECK(status.ok()) << "cp all-reduce of the loss failed: " << status.ToString();
    compute.Fill(loss / static_cast<float>(context_.cp_size), loss_1);
  }

  LayerContext context_;
  LayerShapes shapes_;
  OwnedParameter own_;  // untied only: [V, H] -> [Vl, H]
  Tensor* weight_ = nullptr;
  Tensor* weight_grad_ = nullptr;
  StashMap<HeadStash> stashes_;
};

}  // namespace

std::unique_ptr<Layer> MakeFinalNorm(const ModelSpec& model, const LayerShapes& shapes,
                                     const LayerContext& context) {
  return std::make_unique<FinalNorm>(model, shapes, context);
}

std::unique_ptr<Layer> MakeLmHead(const ModelSpec& model, const LayerShapes& shapes,
                                  const LayerContext& context) {
  return std::make_unique<LmHead>(model, shapes, context);
}

}  // namespace trident
