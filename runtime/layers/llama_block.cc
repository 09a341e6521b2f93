// The Llama block (no biases; RMSNorm weights only). Legend in layer.h and llama_parts.h.
//   x1 = x  + reduce(Attn(RoPE(n1·Wqᵀ), RoPE(n1·Wkᵀ), n1·Wvᵀ)·Woᵀ),  n1 = gather(N1(x))
//   y  = x1 + reduce((silu(n2·Wgᵀ) ⊙ n2·Wuᵀ)·Wdᵀ),                 n2 = gather(N2(x1))
// gather and reduce are TpGather and TpReduce (layer_ops.h): under sequence parallelism x, x1,
// the norms and the stashed norm outputs hold this rank's S/t tokens of each sequence.
// Weights [out, in]: q [H, H], k and v [K·D, H], gate and up [F, H] column-parallel (rows, so
// whole heads and kv heads per rank); o [H, H] and down [H, F] row-parallel (columns).
// Stash (recompute none): exactly LayerShapes::ForwardStash (models/layer_stash_shapes.cc): x,
// N1 output, x1, N2 output; q, k, v after RoPE, context, gate, up, SwiGLU output; the softmax;
// and the fp32 RMSNorm rstd (which the cost model leaves out).
// Context parallelism: q, k, v hold this rank's S/cp tokens; attention reads the whole
// sequences' k and v (CpGather, once in Forward and once in BackwardInput) and reduce-scatters
// their gradients back (CpReduce).
#include <vector>

#include "runtime/layers/layers_internal.h"
#include "runtime/layers/llama_parts.h"

namespace trident {

namespace {

struct LlamaStash {
  Tensor x, rstd1, n1, q, k, v, probs, ctx, x1, rstd2, n2, gate, up, act;
  Tensor dq, dk, dv, dattn, dgate, dup, dmlp;  // kept from BackwardInput for BackwardWeight
  // The whole sequences' k and v (views of k and v for cp 1), during Forward and BackwardInput
  // only: not stash.
  Tensor k_whole, v_whole;
  int64_t Bytes() const {
    return SumBytes({&x,    &rstd1, &n1,  &q,  &k,  &v,  &probs, &ctx,   &x1,  &rstd2, &n2,
                     &gate, &up,    &act, &dq, &dk, &dv, &dattn, &dgate, &dup, &dmlp});
  }
};

class LlamaBlock final : public Layer {
 public:
  LlamaBlock(const ModelSpec& model, const LayerShapes& shapes, const LayerContext& context)
      : context_(context),
        shapes_(shapes),
        eps_(static_cast<float>(model.norm_eps)),
        theta_(model.rope_theta) {
    norm1_ = MakeNormParameter(context, shapes.Param("norm1.weight"), InitKind::Ones());
    wq_ = MakeParameter(context, shapes.Param("attn.q.weight"), WeightInit());
    wk_ = MakeParameter(context, shapes.Param("attn.k.weight"), WeightInit());
    wv_ = MakeParameter(context, shapes.Param("attn.v.weight"), WeightInit());
    wo_ = MakeParameter(context, shapes.Param("attn.o.weight"), WeightInit());
    norm2_ = MakeNormParameter(context, shapes.Param("norm2.weight"), InitKind::Ones());
    wg_ = MakeParameter(context, shapes.Param("mlp.gate.weight"), WeightInit());
    wu_ = MakeParameter(context, shapes.Param("mlp.up.weight"), WeightInit());
    wd_ = MakeParameter(context, shapes.Param("mlp.down.weight"), WeightInit());
    rotate_ = MakeRotateHalf(*context.compute, shapes.head_dim, context.dtype);
  }

  Tensor Forward(int micro_batch, Tensor input, const Tensor* /*targets*/) override {
    LlamaStash st;
    st.x = std::move(input);
    Tensor y = Run(st);
    DropWholeKeys(st);
    if (context_.recompute == RecomputeMode::kSelective) st.probs = Tensor();
    if (context_.recompute == RecomputeMode::kFull) {
      Tensor x = std::move(st.x);
      st = LlamaStash();
      st.x = std::move(x);
    }
    stashes_.Put(micro_batch, std::move(st));
    return y;
  }

  Tensor BackwardInput(int micro_batch, Tensor dy) override {
    Compute& compute = *context_.compute;
    LlamaStash& st = stashes_.Get(micro_batch);
    if (!st.x1.defined()) Run(st);  // full recompute
    if (!st.probs.defined()) {
      GatherKeys(st);
      st.probs = compute.Allocate(shapes_.Scores(Whole(st)), st.q.type());
      GqaProbs(compute, GqaOf(st), st.q, st.k_whole, st.probs);
    }
    Tensor dx1 = Clone(compute, dy);
    MlpBackward(st, std::move(dy), dx1);
    Tensor dx = Clone(compute, dx1);
    AttentionBackward(st, std::move(dx1), dx);
    return dx;
  }

  void BackwardWeight(int micro_batch) override {
    Compute& compute = *context_.compute;
    LlamaStash& st = stashes_.Get(micro_batch);
    LinearBackwardWeight(compute, st.act, st.dmlp, wd_.grad, nullptr);
    const Tensor n2 = TpGatherKept(context_, st.n2);
    LinearBackwardWeight(compute, n2, st.dgate, wg_.grad, nullptr);
    LinearBackwardWeight(compute, n2, st.dup, wu_.grad, nullptr);
    LinearBackwardWeight(compute, st.ctx, st.dattn, wo_.grad, nullptr);
    const Tensor n1 = TpGatherKept(context_, st.n1);
    LinearBackwardWeight(compute, n1, st.dq, wq_.grad, nullptr);
    LinearBackwardWeight(compute, n1, st.dk, wk_.grad, nullptr);
    LinearBackwardWeight(compute, n1, st.dv, wv_.grad, nullptr);
    stashes_.Erase(micro_batch);
  }

  void Discard(int micro_batch) override { stashes_.Erase(micro_batch); }

  std::vector<Parameter> Parameters() override {
    std::vector<Parameter> out;
    for (OwnedParameter* p : {&norm1_, &wq_, &wk_, &wv_, &wo_, &norm2_, &wg_, &wu_, &wd_}) {
      out.push_back(p->Ref());
    }
    return out;
  }

  int64_t StashBytes(int micro_batch) const override { return stashes_.Bytes(micro_batch); }

 private:
  // The whole micro-batch (st.x holds this rank's share under sequence parallelism).
  TokenBlock Whole(const LlamaStash& st) const { return shapes_.Gathered(TokensOf(st.x)); }

  GqaShape GqaOf(const LlamaStash& st) const {
    const TokenBlock tb = Whole(st);
    return {tb.batch,
            tb.seq,
            shapes_.heads,
            shapes_.kv_heads,
            shapes_.head_dim,
            shapes_.group,
            shapes_.q_width,
            shapes_.kv_width,
            shapes_.Keys(tb).seq,
            QueryChunks(context_, tb.seq)};
  }

  // RoPE's tables for `dims_BSND` at this rank's sequence positions.
  RopeTables Rope(const std::vector<int64_t>& dims_BSND) const {
    return MakeRopeTables(*context_.compute, dims_BSND, SequencePositions(context_, dims_BSND[1]),
                          theta_, context_.dtype);
  }

  // The whole sequences' k and v (views of k and v for cp 1), once per pass.
  void GatherKeys(LlamaStash& st) const {
    if (st.k_whole.defined()) return;
    st.k_whole = CpGather(context_, st.k);
    st.v_whole = CpGather(context_, st.v);
  }
  static void DropWholeKeys(LlamaStash& st) {
    st.k_whole = Tensor();
    st.v_whole = Tensor();
  }

  // in·wᵀ into a new tensor of shape `out_dims`.
  Tensor Linear(const Tensor& in, const OwnedParameter& w, const std::vector<int64_t>& out_dims) {
    Tensor out = context_.compute->Allocate(out_dims, in.type());
    LinearForward(*context_.compute, in, w.value, nullptr, out);
    return out;
  }

  void Norm(const Tensor& x, const OwnedParameter& w, Tensor& out, Tensor& rstd) {
    out = context_.compute->Allocate(x.shape(), x.type());
    rstd = context_.compute->Allocate(shapes_.NormStat(TokensOf(x)));
    context_.compute->RmsNorm(x, w.value, eps_, out, rstd);
  }

  // The forward from st.x, filling every stash entry; returns y.
  Tensor Run(LlamaStash& st) {
    Compute& compute = *context_.compute;
    const GqaShape g = GqaOf(st);
    const TokenBlock tb = Whole(st);
    Norm(st.x, norm1_, st.n1, st.rstd1);
    Tensor n1 = TpGatherKept(context_, st.n1);
    st.q = Linear(n1, wq_, shapes_.Query(tb));
    st.k = Linear(n1, wk_, shapes_.KeyValue(tb));
    st.v = Linear(n1, wv_, shapes_.KeyValue(tb));
    n1 = Tensor();
    RopeForward(compute, Rope(shapes_.QueryHeads(tb)), rotate_, st.q);
    RopeForward(compute, Rope(shapes_.KeyValueHeads(tb)), rotate_, st.k);
    GatherKeys(st);
    st.probs = compute.Allocate(shapes_.Scores(tb), st.q.type());
    GqaProbs(compute, g, st.q, st.k_whole, st.probs);
    st.ctx = compute.Allocate(shapes_.Query(tb), st.q.type());
    GqaContext(compute, g, st.probs, st.v_whole, st.ctx);
    st.x1 = TpReduce(context_, Linear(st.ctx, wo_, shapes_.Hidden(tb)));
    compute.Add(st.x1, st.x, st.x1);
    Norm(st.x1, norm2_, st.n2, st.rstd2);
    Tensor n2 = TpGatherKept(context_, st.n2);
    st.gate = Linear(n2, wg_, shapes_.Ffn(tb));
    st.up = Linear(n2, wu_, shapes_.Ffn(tb));
    n2 = Tensor();
    st.act = compute.Allocate(shapes_.Ffn(tb), st.gate.type());
    compute.SwiGlu(st.gate, st.up, st.act);
    Tensor y = TpReduce(context_, Linear(st.act, wd_, shapes_.Hidden(tb)));
    compute.Add(y, st.x1, y);
    return y;
  }

  // dx1 += the MLP path's gradient (through N2); keeps what the MLP weights need.
  void MlpBackward(LlamaStash& st, Tensor dy_local, Tensor& dx1) {
    Compute& compute = *context_.compute;
    Tensor dy = TpGather(context_, std::move(dy_local));
    Tensor dact = compute.Allocate(st.act.shape(), dy.type());
    LinearBackwardInput(compute, dy, wd_.value, dact);
    st.dgate = compute.Allocate(st.gate.shape(), dy.type());
    st.dup = compute.Allocate(st.up.shape(), dy.type());
    compute.SwiGluBackward(st.gate, st.up, dact, st.dgate, st.dup);
    st.gate = Tensor();
    st.up = Tensor();
    Tensor dn2 = compute.Allocate(dy.shape(), dy.type());
    LinearBackwardInput(compute, st.dgate, wg_.value, dn2);
    compute.Gemm(false, false, 1.0f, st.dup, wu_.value, 1.0f, dn2);
    dn2 = TpReduce(context_, std::move(dn2));
    compute.RmsNormBackward(st.x1, norm2_.value, st.rstd2, dn2, dx1, norm2_.grad);
    st.dmlp = std::move(dy);
    st.x1 = Tensor();
    st.rstd2 = Tensor();
  }

  // dx += the attention path's gradient (through N1); keeps what q, k, v and o need.
  void AttentionBackward(LlamaStash& st, Tensor dx1_local, Tensor& dx) {
    Compute& compute = *context_.compute;
    const GqaShape g = GqaOf(st);
    const TokenBlock tb = Whole(st);
    Tensor dx1 = TpGather(context_, std::move(dx1_local));
    Tensor dctx = compute.Allocate(st.ctx.shape(), dx1.type());
    LinearBackwardInput(compute, dx1, wo_.value, dctx);
    GatherKeys(st);
    st.dq = compute.Allocate(st.q.shape(), dx1.type());
    Tensor dk_whole = compute.Allocate(st.k_whole.shape(), dx1.type());
    Tensor dv_whole = compute.Allocate(st.v_whole.shape(), dx1.type());
    GqaBackward(compute, g, {&st.q, &st.k_whole, &st.v_whole, &st.probs}, dctx, st.dq, dk_whole,
                dv_whole);
    DropWholeKeys(st);
    st.dk = CpReduce(context_, std::move(dk_whole));
    st.dv = CpReduce(context_, std::move(dv_whole));
    RopeBackward(compute, Rope(shapes_.QueryHeads(tb)), rotate_, st.dq);
    RopeBackward(compute, Rope(shapes_.KeyValueHeads(tb)), rotate_, st.dk);
    Tensor dn1 = compute.Allocate(dx1.shape(), dx1.type());
    LinearBackwardInput(compute, st.dq, wq_.value, dn1);
    compute.Gemm(false, false, 1.0f, st.dk, wk_.value, 1.0f, dn1);
    compute.Gemm(false, false, 1.0f, st.dv, wv_.value, 1.0f, dn1);
    dn1 = TpReduce(context_, std::move(dn1));
    compute.RmsNormBackward(st.x, norm1_.value, st.rstd1, dn1, dx, norm1_.grad);
    st.dattn = std::move(dx1);
    for (Tensor* t : {&st.x, &st.rstd1, &st.q, &st.k, &st.v, &st.probs}) *t = Tensor();
  }

  LayerContext context_;
  LayerShapes shapes_;
  float eps_;
  double theta_;
  OwnedParameter norm1_, wq_, wk_, wv_, wo_, norm2_, wg_, wu_, wd_;
  Tensor rotate_;  // [D, D], see llama_parts.h
  StashMap<LlamaStash> stashes_;
};

}  // namespace

std::unique_ptr<Layer> MakeLlamaBlock(const ModelSpec& model, const LayerShapes& shapes,
                                      const LayerContext& context) {
  return std::make_unique<LlamaBlock>(model, shapes, context);
}

}  // namespace trident
