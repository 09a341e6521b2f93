#include "models/layer_cost.h"

#include "core/check.h"
#include "models/layer_cost_internal.h"

namespace trident {

namespace {

constexpr int64_t kTokenIdBytes = 4;  // int32 token ids

// Bytes the cost model counts per stashed element.
int64_t CountedBytes(StashElement element, int64_t e) {
  switch (element) {
    case StashElement::kActivation:
      return e;
    case StashElement::kDropoutMask:
      return 1;
    case StashElement::kNormStat:
      return 0;
    case StashElement::kTokenId:
      return kTokenIdBytes;
  }
  return e;
}

}  // namespace

int64_t LayerCostInputs::ActivationBytes() const { return e * ElementsOf(shapes.Hidden(tokens)); }

int64_t LayerCostInputs::LocalActivationBytes() const {
  return e * ElementsOf(shapes.Hidden(shapes.Local(tokens)));
}

LayerCostInputs MakeLayerCostInputs(const ModelSpec& model, LayerKind kind,
                                    const LayerShape& shape) {
  LayerCostInputs in;
  in.shapes = MakeLayerShapes(model, kind, {shape.tp, 0, shape.sequence_parallel, shape.cp});
  in.tokens = {shape.micro_batch, shape.seq_len / shape.cp};
  in.e = DTypeBytes(shape.dtype);
  in.recompute = shape.recompute;
  return in;
}

void SetLayerParams(const LayerCostInputs& in, LayerCost* cost) {
  for (const ParamShape& p : in.shapes.params) {
    cost->params += p.LocalElements();
    cost->total_params += p.FullElements();
  }
  cost->param_bytes = cost->params * in.e;
}

int64_t LayerStashBytes(const LayerCostInputs& in) {
  int64_t bytes = 0;
  for (const StashTensor& t : in.shapes.ForwardStash(in.tokens)) {
    if (t.KeptUnder(in.recompute)) bytes += t.Elements() * CountedBytes(t.element, in.e);
  }
  return bytes;
}

void SetBlockFlops(const LayerCostInputs& in, LayerCost* cost) {
  double linear = 0, attention = 0;
  for (const GemmShape& g : in.shapes.ForwardGemms(in.tokens)) {
    (g.attention ? attention : linear) += g.Flops();
  }
  cost->fwd_flops = linear + attention;
  cost->bwd_input_flops = linear + 2 * attention;
  cost->bwd_weight_flops = linear;
  switch (in.recompute) {
    case RecomputeMode::kNone:
      cost->recompute_flops = 0;
      break;
    case RecomputeMode::kSelective:
      cost->recompute_flops = attention;
      break;
    case RecomputeMode::kFull:
      cost->recompute_flops = cost->fwd_flops;
      break;
  }
}

GroupCalls TpCallsOf(const LayerCostInputs& in, int count, int64_t bytes) {
  if (in.Tp() <= 1) return {};
  return {count, count * bytes};
}

GroupCalls CpCallsOf(const LayerCostInputs& in, int count, int64_t bytes) {
  if (in.Cp() <= 1) return {};
  return {count, count * bytes};
}

LayerCost AnalyticLayerCost(const ModelSpec& model, LayerKind kind, const LayerShape& shape) {
  TRIDENT_CHECK(shape.tp >= 1 && shape.micro_batch >= 1 && shape.seq_len >= 1 && shape.cp >= 1)
      << "tp " << shape.tp << ", micro-batch " << shape.micro_batch << ", seq_len " << shape.seq_len
      << ", cp " << shape.cp;
  TRIDENT_CHECK(shape.cp == 1 || shape.seq_len % (2 * shape.cp) == 0)
      << "cp " << shape.cp << " needs 2·cp dividing seq_len " << shape.seq_len;
  if (kind == LayerKind::kGeneric) return {};
  const LayerCostInputs in = MakeLayerCostInputs(model, kind, shape);
  switch (kind) {
    case LayerKind::kEmbedding:
      return EmbeddingCost(in);
    case LayerKind::kGptBlock:
    case LayerKind::kLlamaBlock:
      return BlockCost(in, 2);
    case LayerKind::kFinalNorm:
      return FinalNormCost(in);
    case LayerKind::kLmHead:
      return LmHeadCost(in);
    case LayerKind::kMlpBlock:
      return BlockCost(in, 1);
    case LayerKind::kGeneric:
      return {};
  }
  TRIDENT_CHECK(false) << "unknown layer kind " << static_cast<int>(kind);
  return {};
}

}  // namespace trident
