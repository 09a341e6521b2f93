#include "models/layer_gemms.h"

namespace trident {
namespace {

// Batched attention products of one rank: a/t heads per sequence, b sequences.
//   scores  Q·Kᵀ  [s × d]·[d × s]
//   context P·V   [s × s]·[s × d]
// Example gpt2-small (a 12, d 64), b 1, s 1024, t 1: 2 · (2·1024·1024·64·12) = 3.2 GFLOP,
// the 4bs²h of the block formula.
void AddAttention(const ModelSpec& model, const LayerShape& shape, std::vector<GemmShape>* out) {
  int64_t heads = shape.micro_batch * (model.heads / shape.tp);
  int64_t d = model.HeadDim();
  out->push_back({shape.seq_len, shape.seq_len, d, heads, true});
  out->push_back({shape.seq_len, d, shape.seq_len, heads, true});
}

// One linear layer applied to every token: [tokens × in] · [in × out].
GemmShape Linear(const LayerShape& shape, int64_t in, int64_t out) {
  return {shape.micro_batch * shape.seq_len, out, in, 1, false};
}

std::vector<GemmShape> GptBlock(const ModelSpec& m, const LayerShape& s) {
  const int64_t h = m.hidden, f = m.ffn_hidden, t = s.tp;
  std::vector<GemmShape> gemms = {Linear(s, h, 3 * h / t), Linear(s, h / t, h), Linear(s, h, f / t),
                                  Linear(s, f / t, h)};
  AddAttention(m, s, &gemms);
  return gemms;
}

std::vector<GemmShape> LlamaBlock(const ModelSpec& m, const LayerShape& s) {
  const int64_t h = m.hidden, f = m.ffn_hidden, t = s.tp;
  const int64_t kvd = m.kv_heads * m.HeadDim();
  std::vector<GemmShape> gemms = {Linear(s, h, (h + 2 * kvd) / t), Linear(s, h / t, h),
                                  Linear(s, h, 2 * f / t), Linear(s, f / t, h)};
  AddAttention(m, s, &gemms);
  return gemms;
}

}  // namespace

std::vector<GemmShape> LayerForwardGemms(const ModelSpec& model, LayerKind kind,
                                         const LayerShape& shape) {
  switch (kind) {
    case LayerKind::kGptBlock:
      return GptBlock(model, shape);
    case LayerKind::kLlamaBlock:
      return LlamaBlock(model, shape);
    case LayerKind::kMlpBlock:
      return {Linear(shape, model.hidden, model.ffn_hidden / shape.tp),
              Linear(shape, model.ffn_hidden / shape.tp, model.hidden)};
    case LayerKind::kLmHead:
      return {Linear(shape, model.hidden, (model.vocab_size + shape.tp - 1) / shape.tp)};
    case LayerKind::kEmbedding:
    case LayerKind::kFinalNorm:
      return {};
  }
  return {};
}

}  // namespace trident
