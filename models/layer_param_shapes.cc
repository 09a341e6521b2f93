// The parameter tensors of every layer kind: whole shapes, split axes and this rank's part.
// Weights of linear layers are [out, in]. Symbols as in layer_shapes.h; KV = K·D.
#include <cstdint>
#include <string>
#include <vector>

#include "models/layer_shapes_internal.h"

namespace trident {
namespace {

using Params = std::vector<ParamShape>;

// The GELU MLP: fc1 column-parallel (weight and bias by rows), fc2 row-parallel (weight by
// columns; its bias is added after the all-reduce, so every rank holds it whole).
void AddGeluMlp(const ModelSpec& m, const std::string& prefix, const RankSplit& split,
                Params* out) {
  const int64_t h = m.hidden, f = m.ffn_hidden;
  out->push_back(MakeParamShape(prefix + "fc1.weight", {f, h}, ShardAxis::kRows, split));
  out->push_back(MakeParamShape(prefix + "fc1.bias", {f}, ShardAxis::kRows, split));
  out->push_back(MakeParamShape(prefix + "fc2.weight", {h, f}, ShardAxis::kColumns, split));
  out->push_back(MakeParamShape(prefix + "fc2.bias", {h}, ShardAxis::kReplicated, split));
}

// A LayerNorm's weight and bias, whole on every rank.
void AddLayerNorm(const ModelSpec& m, const std::string& prefix, const RankSplit& split,
                  Params* out) {
  out->push_back(MakeParamShape(prefix + "weight", {m.hidden}, ShardAxis::kReplicated, split));
  out->push_back(MakeParamShape(prefix + "bias", {m.hidden}, ShardAxis::kReplicated, split));
}

// GPT block: the QKV weight [3H, H] keeps its rows head by head ([A, 3, D], Megatron's layout),
// so a row split hands each rank whole heads; proj [H, H] is row-parallel.
Params GptBlockParams(const ModelSpec& m, const RankSplit& split) {
  const int64_t h = m.hidden;
  Params out;
  AddLayerNorm(m, "ln1.", split, &out);
  out.push_back(MakeParamShape("attn.qkv.weight", {3 * h, h}, ShardAxis::kRows, split));
  out.push_back(MakeParamShape("attn.qkv.bias", {3 * h}, ShardAxis::kRows, split));
  out.push_back(MakeParamShape("attn.proj.weight", {h, h}, ShardAxis::kColumns, split));
  out.push_back(MakeParamShape("attn.proj.bias", {h}, ShardAxis::kReplicated, split));
  AddLayerNorm(m, "ln2.", split, &out);
  AddGeluMlp(m, "mlp.", split, &out);
  return out;
}

// Llama block, no biases: q, k, v, gate and up column-parallel (whole heads and kv heads per
// rank), o and down row-parallel, RMSNorm weights whole.
Params LlamaBlockParams(const ModelSpec& m, const RankSplit& split) {
  const int64_t h = m.hidden, kv = m.kv_heads * m.HeadDim(), f = m.ffn_hidden;
  const auto add = [&](const char* name, std::vector<int64_t> full, ShardAxis axis, Params* out) {
    out->push_back(MakeParamShape(name, std::move(full), axis, split));
  };
  Params out;
  add("norm1.weight", {h}, ShardAxis::kReplicated, &out);
  add("attn.q.weight", {h, h}, ShardAxis::kRows, &out);
  add("attn.k.weight", {kv, h}, ShardAxis::kRows, &out);
  add("attn.v.weight", {kv, h}, ShardAxis::kRows, &out);
  add("attn.o.weight", {h, h}, ShardAxis::kColumns, &out);
  add("norm2.weight", {h}, ShardAxis::kReplicated, &out);
  add("mlp.gate.weight", {f, h}, ShardAxis::kRows, &out);
  add("mlp.up.weight", {f, h}, ShardAxis::kRows, &out);
  add("mlp.down.weight", {h, f}, ShardAxis::kColumns, &out);
  return out;
}

// Token table [V, H] split by vocabulary rows; learned positions [max_seq_len, H] whole.
Params EmbeddingParams(const ModelSpec& m, const RankSplit& split) {
  Params out = {MakeParamShape("token.weight", {m.vocab_size, m.hidden}, ShardAxis::kRows, split)};
  if (m.positions == PositionKind::kLearned) {
    out.push_back(MakeParamShape("position.weight", {m.max_seq_len, m.hidden},
                                 ShardAxis::kReplicated, split));
  }
  return out;
}

Params FinalNormParams(const ModelSpec& m, const RankSplit& split) {
  Params out;
  if (m.norm == NormKind::kLayerNorm) {
    AddLayerNorm(m, "", split, &out);
  } else {
    out.push_back(MakeParamShape("weight", {m.hidden}, ShardAxis::kReplicated, split));
  }
  return out;
}

// A tied head holds nothing: it uses the embedding's token table.
Params LmHeadParams(const ModelSpec& m, const RankSplit& split) {
  if (m.tied_embeddings) return {};
  return {MakeParamShape("weight", {m.vocab_size, m.hidden}, ShardAxis::kRows, split)};
}

}  // namespace

std::vector<ParamShape> LayerParamShapes(const ModelSpec& model, LayerKind kind,
                                         const RankSplit& split) {
  switch (kind) {
    case LayerKind::kEmbedding:
      return EmbeddingParams(model, split);
    case LayerKind::kGptBlock:
      return GptBlockParams(model, split);
    case LayerKind::kLlamaBlock:
      return LlamaBlockParams(model, split);
    case LayerKind::kMlpBlock: {
      Params out;
      AddGeluMlp(model, "", split, &out);
      return out;
    }
    case LayerKind::kFinalNorm:
      return FinalNormParams(model, split);
    case LayerKind::kLmHead:
      return LmHeadParams(model, split);
    case LayerKind::kGeneric:
      return {};
  }
  return {};
}

}  // namespace trident
