// What each layer's forward pass keeps for backward, and the blocks' forward GEMMs.
// Symbols as in layer_shapes.h; N = B·S tokens. Stash names follow the runtime's stash fields
// (runtime/layers); the cost model sums their bytes (models/*_cost.cc).
#include <vector>

#include "models/layer_shapes_internal.h"

namespace trident {
namespace {

constexpr StashElement kAct = StashElement::kActivation;
constexpr StashElement kMask = StashElement::kDropoutMask;
constexpr StashElement kStat = StashElement::kNormStat;

// The causal self-attention core of a block. Unfused: the softmax output [B, Al, S, S], and
// with dropout its 1-byte mask and the dropped-out probabilities, rebuilt by selective
// recompute. Flash: only the softmax's log-sum-exp per query (fp32, like a norm's statistic),
// its dropout mask regenerated from the random seed in backward.
void AddAttentionCore(const LayerShapes& s, const TokenBlock& tb, bool dropout,
                      std::vector<StashTensor>* out) {
  std::vector<int64_t> scores = s.Scores(tb);
  if (s.flash_attention) {
    scores.pop_back();
    out->push_back({"attn.lse", scores, kStat, Rebuilt::kByFull});
    return;
  }
  out->push_back({"attn.probs", scores, kAct, Rebuilt::kBySelective});
  if (!dropout) return;
  out->push_back({"attn.probs_mask", scores, kMask, Rebuilt::kBySelective});
  out->push_back({"attn.probs_dropped", scores, kAct, Rebuilt::kBySelective});
}

}  // namespace

// GPT block: x (the block input), the two LayerNorms' statistics, x1 (LN2 input), the QKV
// input (LN1 output), qkv, the context, the FC1 input (LN2 output), the GELU input and the FC2
// input; with dropout the masks after proj and FC2 and the attention core's dropout. Under
// sequence parallelism the residual-stream tensors (x, x1, the norms' inputs, outputs and
// statistics, the masks) hold this rank's Local(tb) tokens: the norm outputs are kept sharded
// and gathered again for the weight gradients (Korthikanti et al. 2022 §4.2.2).
std::vector<StashTensor> GptBlockStash(const LayerShapes& s, const TokenBlock& tb) {
  const TokenBlock local = s.Local(tb);
  std::vector<StashTensor> out = {
      {"x", s.Hidden(local), kAct, Rebuilt::kNever},
      {"mean1", s.NormStat(local), kStat, Rebuilt::kByFull},
      {"rstd1", s.NormStat(local), kStat, Rebuilt::kByFull},
      {"x1", s.Hidden(local), kAct, Rebuilt::kByFull},
      {"mean2", s.NormStat(local), kStat, Rebuilt::kByFull},
      {"rstd2", s.NormStat(local), kStat, Rebuilt::kByFull},
      {"attn.in", s.Hidden(local), kAct, Rebuilt::kByFull},
      {"attn.qkv", s.Qkv(tb), kAct, Rebuilt::kByFull},
  };
  AddAttentionCore(s, tb, s.dropout, &out);
  out.push_back({"attn.ctx", s.Query(tb), kAct, Rebuilt::kByFull});
  out.push_back({"ffn.in", s.Hidden(local), kAct, Rebuilt::kByFull});
  out.push_back({"ffn.h", s.Ffn(tb), kAct, Rebuilt::kByFull});
  out.push_back({"ffn.act", s.Ffn(tb), kAct, Rebuilt::kByFull});
  if (s.dropout) {
    out.push_back({"attn.proj_mask", s.Hidden(local), kMask, Rebuilt::kByFull});
    out.push_back({"ffn.fc2_mask", s.Hidden(local), kMask, Rebuilt::kByFull});
  }
  return out;
}

// Llama block (no dropout): x, N1's rstd and output, q, k and v after RoPE, the softmax output,
// the context, x1, N2's rstd and output, gate, up and the SwiGLU output.
std::vector<StashTensor> LlamaBlockStash(const LayerShapes& s, const TokenBlock& tb) {
  const TokenBlock local = s.Local(tb);
  std::vector<StashTensor> out = {
      {"x", s.Hidden(local), kAct, Rebuilt::kNever},
      {"rstd1", s.NormStat(local), kStat, Rebuilt::kByFull},
      {"n1", s.Hidden(local), kAct, Rebuilt::kByFull},
      {"q", s.Query(tb), kAct, Rebuilt::kByFull},
      {"k", s.KeyValue(tb), kAct, Rebuilt::kByFull},
      {"v", s.KeyValue(tb), kAct, Rebuilt::kByFull},
  };
  AddAttentionCore(s, tb, false, &out);
  out.push_back({"ctx", s.Query(tb), kAct, Rebuilt::kByFull});
  out.push_back({"x1", s.Hidden(local), kAct, Rebuilt::kByFull});
  out.push_back({"rstd2", s.NormStat(local), kStat, Rebuilt::kByFull});
  out.push_back({"n2", s.Hidden(local), kAct, Rebuilt::kByFull});
  for (const char* name : {"gate", "up", "act"}) {
    out.push_back({name, s.Ffn(tb), kAct, Rebuilt::kByFull});
  }
  return out;
}

// MLP block (no norm, no dropout): the FC1 input (the block input, sharded under sequence
// parallelism and gathered again for the weight gradient), GELU input, FC2 input.
std::vector<StashTensor> MlpBlockStash(const LayerShapes& s, const TokenBlock& tb) {
  return {{"in", s.Hidden(s.Local(tb)), kAct, Rebuilt::kNever},
          {"h", s.Ffn(tb), kAct, Rebuilt::kByFull},
          {"act", s.Ffn(tb), kAct, Rebuilt::kByFull}};
}

// The layers around the blocks keep the same stash under every recompute mode:
//   embedding   this rank's token ids, int32 [B, S] (the weight gradient scatter-adds by them)
//   final norm  its input and statistics (LayerNorm mean and rstd, or RMSNorm rstd)
//   LM head     its input and the softmax probabilities over this rank's vocabulary rows
// Under sequence parallelism the final norm's tensors and the head's input hold Local(tb)
// tokens (the head gathers its input again for the weight gradient); ids and probabilities
// cover the whole micro-batch.
std::vector<StashTensor> VocabLayerStash(const LayerShapes& s, const TokenBlock& tb) {
  const TokenBlock local = s.Local(tb);
  switch (s.kind) {
    case LayerKind::kEmbedding:
      return {{"local_ids", s.Ids(tb), StashElement::kTokenId, Rebuilt::kNever}};
    case LayerKind::kFinalNorm: {
      std::vector<StashTensor> out = {{"x", s.Hidden(local), kAct, Rebuilt::kNever}};
      if (s.layer_norm) out.push_back({"mean", s.NormStat(local), kStat, Rebuilt::kNever});
      out.push_back({"rstd", s.NormStat(local), kStat, Rebuilt::kNever});
      return out;
    }
    case LayerKind::kLmHead:
      return {{"x", s.Hidden(local), kAct, Rebuilt::kNever},
              {"probs", s.Logits(tb), kAct, Rebuilt::kNever}};
    default:
      return {};
  }
}

// Linear layers, then the batched attention products of this rank's heads (B·Al of them),
// with Sk = S·cp keys (the whole sequence, gathered over the cp group):
//   scores  Q·Kᵀ  [S × D]·[D × Sk]     context  P·V  [S × Sk]·[Sk × D]
// GPT: QKV [H → 3Hl], proj [Hl → H], FC1 [H → Fl], FC2 [Fl → H].
// Llama: Q, K and V as one [H → Hl + 2KVl], O [Hl → H], gate and up as one [H → 2Fl],
// down [Fl → H]. MLP: FC1, FC2.
// Example gpt2-small (A 12, D 64), B 1, S 1024, t 1: the attention products give
// 2 · (2·1024·1024·64·12) = 3.2 GFLOP, the 4BS²H of the block formula.
std::vector<GemmShape> BlockGemms(const LayerShapes& s, const TokenBlock& tb) {
  if (s.kind == LayerKind::kMlpBlock) {
    return {LinearGemm(tb, s.hidden, s.ffn), LinearGemm(tb, s.ffn, s.hidden)};
  }
  const bool llama = s.kind == LayerKind::kLlamaBlock;
  const int64_t up_width = llama ? 2 * s.ffn : s.ffn;
  const int64_t heads = tb.batch * s.heads;
  const int64_t keys = s.Keys(tb).seq;
  return {LinearGemm(tb, s.hidden, s.qkv_width),   LinearGemm(tb, s.q_width, s.hidden),
          LinearGemm(tb, s.hidden, up_width),      LinearGemm(tb, s.ffn, s.hidden),
          {tb.seq, keys, s.head_dim, heads, true}, {tb.seq, s.head_dim, keys, heads, true}};
}

}  // namespace trident
