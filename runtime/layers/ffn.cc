// The GELU MLP half of a block. Legend in layer.h.
//   forward   h = gather(in)·W1ᵀ + b1 (column-parallel, local Fl)   act = gelu(h)
//             out = reduce(act·W2ᵀ) + b2                             (row-parallel)
//   backward  dout' = gather(dout)  dact = dout'·W2   dh = gelu'(h) ⊙ dact   din = reduce(dh·W1)
//             dW2 += dout'ᵀ·act  db2 += Σ dout'  dW1 += dhᵀ·gather(in)  db1 += Σ dh
// gather and reduce are TpGather and TpReduce (layer_ops.h): identity and all-reduce, or under
// sequence parallelism all-gather and reduce-scatter along S, `in` then being stashed sharded.
#include "runtime/layers/block_parts.h"

namespace trident {

FfnParams MakeFfnParams(const LayerContext& context, const LayerShapes& shapes,
                        const std::string& prefix) {
  FfnParams p;
  p.fc1_weight = MakeParameter(context, shapes.Param(prefix + "fc1.weight"), WeightInit());
  p.fc1_bias = MakeParameter(context, shapes.Param(prefix + "fc1.bias"), InitKind::Zeros());
  p.fc2_weight = MakeParameter(context, shapes.Param(prefix + "fc2.weight"), WeightInit());
  p.fc2_bias = MakeParameter(context, shapes.Param(prefix + "fc2.bias"), InitKind::Zeros());
  return p;
}

void AppendFfnParams(FfnParams& p, std::vector<Parameter>& out) {
  for (OwnedParameter* q : {&p.fc1_weight, &p.fc1_bias, &p.fc2_weight, &p.fc2_bias}) {
    out.push_back(q->Ref());
  }
}

void FfnRecompute(const LayerContext& context, const LayerShapes& shapes, FfnParams& p,
                  FfnStash& stash) {
  Compute& compute = *context.compute;
  const Tensor in_BSH = TpGatherKept(context, stash.in_BSH);
  stash.h_BSFl = compute.Allocate(shapes.Ffn(TokensOf(in_BSH)), in_BSH.type());
  LinearForward(compute, in_BSH, p.fc1_weight.value, &p.fc1_bias.value, stash.h_BSFl);
  stash.act_BSFl = compute.Allocate(stash.h_BSFl.shape(), stash.h_BSFl.type());
  compute.Activation(ActivationKind::kGelu, stash.h_BSFl, stash.act_BSFl);
}

Tensor FfnForward(const LayerContext& context, const LayerShapes& shapes, FfnParams& p,
                  Tensor in_BSH, FfnStash& stash) {
  stash.in_BSH = std::move(in_BSH);
  FfnRecompute(context, shapes, p, stash);
  Tensor partial_BSH =
      context.compute->Allocate(shapes.Hidden(TokensOf(stash.act_BSFl)), stash.act_BSFl.type());
  LinearForward(*context.compute, stash.act_BSFl, p.fc2_weight.value, nullptr, partial_BSH);
  Tensor out_BSH = TpReduce(context, std::move(partial_BSH));
  context.compute->AddBias(p.fc2_bias.value, out_BSH);
  return out_BSH;
}

Tensor FfnBackwardInput(const LayerContext& context, FfnParams& p, FfnStash& stash,
                        Tensor dout_local) {
  Compute& compute = *context.compute;
  Tensor dout_BSH = TpGather(context, std::move(dout_local));
  Tensor dact_BSFl = compute.Allocate(stash.act_BSFl.shape(), stash.act_BSFl.type());
  LinearBackwardInput(compute, dout_BSH, p.fc2_weight.value, dact_BSFl);
  compute.ActivationBackward(ActivationKind::kGelu, stash.h_BSFl, dact_BSFl, dact_BSFl);
  stash.h_BSFl = Tensor();
  Tensor din_BSH = compute.Allocate(dout_BSH.shape(), dout_BSH.type());
  LinearBackwardInput(compute, dact_BSFl, p.fc1_weight.value, din_BSH);
  stash.dh_BSFl = std::move(dact_BSFl);
  stash.dout_BSH = std::move(dout_BSH);
  return TpReduce(context, std::move(din_BSH));
}

void FfnBackwardWeight(const LayerContext& context, FfnParams& p, FfnStash& stash) {
  Compute& compute = *context.compute;
  LinearBackwardWeight(compute, stash.act_BSFl, stash.dout_BSH, p.fc2_weight.grad,
                       &p.fc2_bias.grad);
  LinearBackwardWeight(compute, TpGatherKept(context, stash.in_BSH), stash.dh_BSFl,
                       p.fc1_weight.grad, &p.fc1_bias.grad);
  stash = FfnStash();
}

}  // namespace trident
