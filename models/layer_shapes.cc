#include "models/layer_shapes.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "models/layer_shapes_internal.h"

namespace trident {

int64_t ElementsOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t ParamShape::FullElements() const { return ElementsOf(full); }
int64_t ParamShape::LocalElements() const { return ElementsOf(local); }
int64_t StashTensor::Elements() const { return ElementsOf(dims); }

bool StashTensor::KeptUnder(RecomputeMode mode) const {
  switch (mode) {
    case RecomputeMode::kNone:
      return true;
    case RecomputeMode::kSelective:
      return rebuilt != Rebuilt::kBySelective;
    case RecomputeMode::kFull:
      return rebuilt == Rebuilt::kNever;
  }
  return true;
}

// Rank r of t holds [r·c, min((r + 1)·c, d)) of a dim of size d, c = ceil(d/t): the even split
// when t divides d, the padded split otherwise. Example d 10, t 4: [0, 3) [3, 6) [6, 9) [9, 10).
VocabShard ShardRange(int64_t dim, const RankSplit& split) {
  const int64_t chunk = (dim + split.tp - 1) / split.tp;
  const int64_t begin = std::min(chunk * split.tp_rank, dim);
  return {begin, std::min(begin + chunk, dim)};
}

ParamShape MakeParamShape(std::string name, std::vector<int64_t> full, ShardAxis axis,
                          const RankSplit& split) {
  ParamShape p{std::move(name), std::move(full), axis, {}};
  p.local = p.full;
  if (axis == ShardAxis::kRows) p.local.front() = ShardRange(p.full.front(), split).Rows();
  if (axis == ShardAxis::kColumns) p.local.back() = ShardRange(p.full.back(), split).Rows();
  return p;
}

const ParamShape& LayerShapes::Param(std::string_view name) const {
  for (const ParamShape& p : params) {
    if (p.name == name) return p;
  }
  TRIDENT_CHECK(false) << "no parameter " << name << " in a layer of kind "
                       << static_cast<int>(kind);
  return params.front();
}

TokenBlock LayerShapes::Local(const TokenBlock& tb) const {
  if (!split.sequence_parallel) return tb;
  TRIDENT_CHECK(tb.seq % split.tp == 0)
      << "sequence parallelism over tp " << split.tp << " needs a sequence length divisible by "
      << "it, got " << tb.seq;
  return {tb.batch, tb.seq / split.tp};
}

TokenBlock LayerShapes::Gathered(const TokenBlock& local) const {
  return split.sequence_parallel ? TokenBlock{local.batch, local.seq * split.tp} : local;
}

std::vector<int64_t> ContextPositions(int64_t seq, int cp, int cp_rank) {
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(seq / cp));
  if (cp == 1) {
    for (int64_t p = 0; p < seq; ++p) positions.push_back(p);
    return positions;
  }
  TRIDENT_CHECK(seq % (2 * cp) == 0)
      << "cp " << cp << " cannot cut " << seq << " tokens into 2·cp equal chunks";
  const int64_t chunk = seq / (2 * cp);
  for (int64_t index : {int64_t{cp_rank}, int64_t{2 * cp - 1 - cp_rank}}) {
    for (int64_t j = 0; j < chunk; ++j) positions.push_back(index * chunk + j);
  }
  return positions;
}

TokenBlock LayerShapes::Keys(const TokenBlock& tb) const { return {tb.batch, tb.seq * split.cp}; }

int64_t LayerShapes::QueryChunks() const { return split.cp > 1 ? 2 : 1; }

std::vector<int64_t> LayerShapes::CpExchanged() const {
  if (kind == LayerKind::kGptBlock) return {qkv_width};
  if (kind == LayerKind::kLlamaBlock) return {kv_width, kv_width};
  return {};
}

std::vector<int64_t> LayerShapes::Hidden(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, hidden};
}
std::vector<int64_t> LayerShapes::Ids(const TokenBlock& tb) const { return {tb.batch, tb.seq}; }
std::vector<int64_t> LayerShapes::Qkv(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, qkv_width};
}
std::vector<int64_t> LayerShapes::Query(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, q_width};
}
std::vector<int64_t> LayerShapes::KeyValue(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, kv_width};
}
std::vector<int64_t> LayerShapes::QueryHeads(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, heads, head_dim};
}
std::vector<int64_t> LayerShapes::KeyValueHeads(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, kv_heads, head_dim};
}
std::vector<int64_t> LayerShapes::Scores(const TokenBlock& tb) const {
  const int64_t chunks = QueryChunks();
  TRIDENT_CHECK(tb.seq % chunks == 0)
      << "context parallelism needs an even local sequence, got " << tb.seq;
  return {chunks * tb.batch, heads, tb.seq / chunks, Keys(tb).seq};
}
std::vector<int64_t> LayerShapes::Ffn(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, ffn};
}
std::vector<int64_t> LayerShapes::Logits(const TokenBlock& tb) const {
  return {tb.batch, tb.seq, vocab_shard.Rows()};
}
std::vector<int64_t> LayerShapes::NormStat(const TokenBlock& tb) const { return {tb.Tokens()}; }

std::vector<StashTensor> LayerShapes::ForwardStash(const TokenBlock& tb) const {
  switch (kind) {
    case LayerKind::kGptBlock:
      return GptBlockStash(*this, tb);
    case LayerKind::kLlamaBlock:
      return LlamaBlockStash(*this, tb);
    case LayerKind::kMlpBlock:
      return MlpBlockStash(*this, tb);
    case LayerKind::kEmbedding:
    case LayerKind::kFinalNorm:
    case LayerKind::kLmHead:
      return VocabLayerStash(*this, tb);
    case LayerKind::kGeneric:
      return {};
  }
  return {};
}

std::vector<GemmShape> LayerShapes::ForwardGemms(const TokenBlock& tb) const {
  switch (kind) {
    case LayerKind::kGptBlock:
    case LayerKind::kLlamaBlock:
    case LayerKind::kMlpBlock:
      return BlockGemms(*this, tb);
    case LayerKind::kLmHead:
      return {LinearGemm(tb, hidden, vocab_shard.Rows())};
    case LayerKind::kEmbedding:
    case LayerKind::kFinalNorm:
    case LayerKind::kGeneric:
      return {};
  }
  return {};
}

GemmShape LinearGemm(const TokenBlock& tb, int64_t in, int64_t out) {
  return {tb.Tokens(), out, in, 1, false};
}

namespace {

// The attention widths of a block; tp divides heads and kv_heads (checked by the caller).
void SetAttentionDims(const ModelSpec& model, LayerKind kind, int tp, LayerShapes* s) {
  s->heads = model.heads / tp;
  s->kv_heads = model.kv_heads / tp;
  s->head_dim = model.HeadDim();
  s->group = s->heads / s->kv_heads;
  s->q_width = s->heads * s->head_dim;
  s->kv_width = s->kv_heads * s->head_dim;
  if (kind == LayerKind::kGptBlock) {
    s->qkv_width = 3 * s->q_width;
    s->qkv_head_stride = 3 * s->head_dim;
  } else if (kind == LayerKind::kLlamaBlock) {
    s->qkv_width = s->q_width + 2 * s->kv_width;
  }
}

}  // namespace

LayerShapes MakeLayerShapes(const ModelSpec& model, LayerKind kind, const RankSplit& split) {
  TRIDENT_CHECK(split.tp >= 1 && split.tp_rank >= 0 && split.tp_rank < split.tp)
      << "tp rank " << split.tp_rank << " of " << split.tp;
  TRIDENT_CHECK(!split.sequence_parallel || split.tp > 1) << "sequence parallelism needs tp > 1";
  TRIDENT_CHECK(split.cp >= 1) << "cp " << split.cp;
  const std::string problem = model.TensorParallelProblem(split.tp);
  TRIDENT_CHECK(problem.empty()) << model.name << ": " << problem;
  LayerShapes s;
  s.kind = kind;
  s.split = split;
  s.hidden = model.hidden;
  SetAttentionDims(model, kind, split.tp, &s);
  s.ffn = model.ffn_hidden / split.tp;
  s.vocab = model.vocab_size;
  s.vocab_shard = ShardRange(model.vocab_size, split);
  s.layer_norm = model.norm == NormKind::kLayerNorm;
  s.dropout = model.dropout > 0;
  s.flash_attention = model.attention == AttentionKind::kFlash;
  s.params = LayerParamShapes(model, kind, split);
  return s;
}

}  // namespace trident
