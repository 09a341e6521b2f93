#include "models/layer_cost.h"

#include <string>

#include "core/check.h"
#include "models/layer_cost_internal.h"

namespace trident {

LayerDims MakeLayerDims(const ModelSpec& model, const LayerShape& shape) {
  LayerDims d;
  d.b = shape.micro_batch;
  d.s = shape.seq_len;
  d.tokens = d.b * d.s;
  d.h = model.hidden;
  d.a = model.heads;
  d.f = model.ffn_hidden;
  d.v = model.vocab_size;
  d.t = shape.tp;
  d.e = DTypeBytes(shape.dtype);
  d.recompute = shape.recompute;
  return d;
}

int64_t VocabRowsPerRank(int64_t v, int64_t t) { return (v + t - 1) / t; }

void SetBlockFlops(double linear_fwd, double attention_fwd, RecomputeMode mode, LayerCost* cost) {
  cost->fwd_flops = linear_fwd + attention_fwd;
  cost->bwd_input_flops = linear_fwd + 2 * attention_fwd;
  cost->bwd_weight_flops = linear_fwd;
  switch (mode) {
    case RecomputeMode::kNone:
      cost->recompute_flops = 0;
      break;
    case RecomputeMode::kSelective:
      cost->recompute_flops = attention_fwd;
      break;
    case RecomputeMode::kFull:
      cost->recompute_flops = cost->fwd_flops;
      break;
  }
}

int64_t BlockStashBytes(RecomputeMode mode, int64_t all_bytes, int64_t attention_bytes,
                        int64_t input_bytes) {
  switch (mode) {
    case RecomputeMode::kNone:
      return all_bytes;
    case RecomputeMode::kSelective:
      return all_bytes - attention_bytes;
    case RecomputeMode::kFull:
      return input_bytes;
  }
  return all_bytes;
}

void SetTpAllReduces(const LayerDims& d, int fwd_count, int64_t fwd_bytes, int bwd_count,
                     int64_t bwd_bytes, LayerCost* cost) {
  if (d.t <= 1) return;
  cost->tp_fwd_allreduces = fwd_count;
  cost->tp_fwd_allreduce_bytes = fwd_count > 0 ? fwd_bytes : 0;
  cost->tp_bwd_allreduces = bwd_count;
  cost->tp_bwd_allreduce_bytes = bwd_count > 0 ? bwd_bytes : 0;
}

void SetLayerParams(const LayerDims& d, int64_t rank_params, int64_t total_params,
                    LayerCost* cost) {
  cost->params = rank_params;
  cost->total_params = total_params;
  cost->param_bytes = rank_params * d.e;
}

LayerCost AnalyticLayerCost(const ModelSpec& model, LayerKind kind, const LayerShape& shape) {
  TRIDENT_CHECK(shape.tp >= 1 && shape.micro_batch >= 1 && shape.seq_len >= 1)
      << "tp " << shape.tp << ", micro-batch " << shape.micro_batch << ", seq_len "
      << shape.seq_len;
  std::string tp_error = model.TensorParallelProblem(shape.tp);
  TRIDENT_CHECK(tp_error.empty()) << tp_error;
  LayerDims d = MakeLayerDims(model, shape);
  switch (kind) {
    case LayerKind::kEmbedding:
      return EmbeddingCost(model, d);
    case LayerKind::kGptBlock:
      return GptBlockCost(model, d);
    case LayerKind::kLlamaBlock:
      return LlamaBlockCost(model, d);
    case LayerKind::kFinalNorm:
      return FinalNormCost(model, d);
    case LayerKind::kLmHead:
      return LmHeadCost(model, d);
    case LayerKind::kMlpBlock:
      return MlpBlockCost(d);
  }
  TRIDENT_CHECK(false) << "unknown layer kind " << static_cast<int>(kind);
  return {};
}

}  // namespace trident
