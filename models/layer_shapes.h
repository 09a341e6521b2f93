// The one definition of each layer's shapes on one rank of its tensor-parallel group: the
// per-rank dimensions (heads, kv heads, head size, widths, the vocabulary shard), every
// parameter tensor (whole and this rank's part), the activation tensors of one micro-batch,
// what the forward pass stashes for backward, and the forward GEMMs. The analytic cost model
// (models/layer_cost.h) sums FLOPs and bytes over these shapes; the executable layers
// (runtime/layers) allocate their parameters and activations from them. Divisibility is checked
// once, in MakeLayerShapes.
//
// Symbols: B micro-batch, S sequence length, H hidden, A heads, K kv_heads, D = H/A head size,
// F ffn_hidden, V vocabulary, t tp degree. A trailing "l" is this rank's share: Al = A/t,
// Kl = K/t, Hl = Al·D, KVl = Kl·D, Fl = F/t, Vl = this rank's vocabulary rows.
//
// Tensor parallelism is Megatron's (see models/layer_cost.h): column-parallel linears split
// their weight's rows (output features), row-parallel ones its columns (input features);
// vocabulary-parallel tables split rows with the padded split ceil(V/t) (the last ranks hold
// fewer rows, possibly none), the rule of runtime/checkpoint's ShardSlice.
//
// Sequence parallelism (Megatron's, Korthikanti et al. 2022 §4.2.2) splits what tp leaves whole
// along the sequence: the residual stream, the norms and dropout run on this rank's S/t tokens
// of every sequence (rank r holds tokens [r·S/t, (r+1)·S/t) of each), and each tp region
// (attention, MLP, LM head) is entered by an all-gather of its input along S and left by a
// reduce-scatter. Local(tb) is the residual stream's share; the tp regions see the whole tb.
//
// Context parallelism (RankSplit::cp = c > 1) splits every sequence into 2c chunks; cp rank i
// holds chunks i and 2c − 1 − i (Megatron's causal load balance), so the TokenBlock a layer
// sees is this rank's {B, S/c} tokens. Attention computes its local queries against the keys
// and values of the whole sequence, all-gathered over the cp group (Keys(tb) = {B, S}); the
// scores are [2·B, Al, S/(2c), S], chunk-major: query chunk k of sequence b is matrix k·B + b.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model_spec.h"
#include "core/recompute.h"

namespace trident {

// The rank of a layer's parallel group whose shapes are wanted.
struct RankSplit {
  int tp = 1;                      // tensor-parallel degree
  int tp_rank = 0;                 // 0 <= tp_rank < tp; rank 0 holds the most vocabulary rows
  bool sequence_parallel = false;  // REQUIRES: tp > 1 when set
  int cp = 1;                      // context-parallel degree: a TokenBlock is S/cp of each sequence
};

// The sequences of one micro-batch (on one rank).
struct TokenBlock {
  int64_t batch = 1;  // B
  int64_t seq = 1;    // S
  int64_t Tokens() const { return batch * seq; }
};

// How a parameter is split over the tp group.
enum class ShardAxis {
  kReplicated,  // whole on every rank (norms, row-parallel biases, position table)
  kRows,        // dim 0 split: column-parallel weights and biases, vocabulary tables
  kColumns,     // last dim split: row-parallel weights
};

struct ParamShape {
  std::string name;           // "attn.qkv.weight": the runtime's and checkpoints' key
  std::vector<int64_t> full;  // the whole tensor; linear weights are [out, in]
  ShardAxis axis = ShardAxis::kReplicated;
  std::vector<int64_t> local;  // the part this rank holds
  int64_t FullElements() const;
  int64_t LocalElements() const;
  bool operator==(const ParamShape&) const = default;
};

// The vocabulary rows [begin, end) one rank of a vocabulary-parallel table holds.
struct VocabShard {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t Rows() const { return end - begin; }
  bool Holds(int64_t id) const { return id >= begin && id < end; }
  int64_t LocalRow(int64_t id) const { return id - begin; }  // REQUIRES: Holds(id)
  bool operator==(const VocabShard&) const = default;
};

// What a stashed element costs and what rebuilds it.
enum class StashElement {
  kActivation,   // the training dtype
  kDropoutMask,  // 1 byte; present only when the model has dropout
  kNormStat,     // fp32 norm mean / rstd: kept by the layers, left out of the cost model
  kTokenId,      // int32
};
enum class Rebuilt {
  kNever,        // kept under every recompute mode (a block's input, non-block layers)
  kByFull,       // dropped by full recompute only
  kBySelective,  // the attention core: dropped by selective and full recompute
};

struct StashTensor {
  std::string name;
  std::vector<int64_t> dims;
  StashElement element = StashElement::kActivation;
  Rebuilt rebuilt = Rebuilt::kByFull;
  int64_t Elements() const;
  // Whether the forward pass keeps it under `mode`.
  bool KeptUnder(RecomputeMode mode) const;
};

// One forward GEMM: `count` independent products [m × k]·[k × n], 2·m·n·k·count FLOPs.
// `attention` marks the weightless score and context products (see models/layer_gemms.h).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t count = 1;
  bool attention = false;
  double Flops() const { return 2.0 * m * n * k * count; }
  bool operator==(const GemmShape&) const = default;
};

// Per-rank dimensions of one layer. Fields a kind does not use are 0.
struct LayerShapes {
  LayerKind kind = LayerKind::kGptBlock;
  RankSplit split;
  int64_t hidden = 0;              // H, whole on every rank
  int64_t heads = 0;               // Al, query heads on this rank
  int64_t kv_heads = 0;            // Kl (GPT: = Al)
  int64_t head_dim = 0;            // D
  int64_t group = 0;               // Al/Kl query heads per kv head
  int64_t q_width = 0;             // Hl = Al·D: query and attention-context width
  int64_t kv_width = 0;            // KVl = Kl·D: key and value width
  int64_t qkv_width = 0;           // the fused QKV output: GPT 3·Hl, Llama Hl + 2·KVl
  int64_t qkv_head_stride = 0;     // GPT: columns from one head's q to the next's, 3·D
  int64_t ffn = 0;                 // Fl, MLP inner width on this rank
  int64_t vocab = 0;               // V, whole vocabulary
  VocabShard vocab_shard;          // this rank's rows of the vocabulary-parallel tables
  bool layer_norm = false;         // norm is LayerNorm (mean and rstd) rather than RMSNorm (rstd)
  bool dropout = false;            // the model has dropout (1-byte masks in the stash)
  bool flash_attention = false;    // attention: flash (no scores kept, core/model_spec.h)
  std::vector<ParamShape> params;  // in the layer's fixed parameter order

  // REQUIRES: a parameter of that name exists (aborts otherwise).
  const ParamShape& Param(std::string_view name) const;

  // The tokens of micro-batch `tb` this rank's residual stream holds: {B, S/t} under sequence
  // parallelism (REQUIRES: t divides S), else tb.
  TokenBlock Local(const TokenBlock& tb) const;
  // The inverse: the micro-batch whose Local() is `local`.
  TokenBlock Gathered(const TokenBlock& local) const;
  // The keys and values the queries of `tb` attend to: {B, S·cp}, gathered over the cp group.
  TokenBlock Keys(const TokenBlock& tb) const;
  // Query chunks per sequence on this rank: 2 under context parallelism (chunks i and
  // 2·cp − 1 − i), else 1.
  int64_t QueryChunks() const;
  // The widths of the tensors attention gathers over the cp group, one collective each (and
  // whose gradients it reduce-scatters): GPT the fused qkv (its K and V are interleaved per
  // head), Llama k and v; none for other kinds.
  std::vector<int64_t> CpExchanged() const;

  // Activation shapes of tokens `tb` (the whole micro-batch, or Local(tb) of it).
  std::vector<int64_t> Hidden(const TokenBlock& tb) const;         // [B, S, H]
  std::vector<int64_t> Ids(const TokenBlock& tb) const;            // [B, S]
  std::vector<int64_t> Qkv(const TokenBlock& tb) const;            // [B, S, qkv_width]
  std::vector<int64_t> Query(const TokenBlock& tb) const;          // [B, S, Hl]
  std::vector<int64_t> KeyValue(const TokenBlock& tb) const;       // [B, S, KVl]
  std::vector<int64_t> QueryHeads(const TokenBlock& tb) const;     // [B, S, Al, D]
  std::vector<int64_t> KeyValueHeads(const TokenBlock& tb) const;  // [B, S, Kl, D]
  std::vector<int64_t> Scores(const TokenBlock& tb) const;  // [QueryChunks·B, Al, S/chunks, S·cp]
  std::vector<int64_t> Ffn(const TokenBlock& tb) const;     // [B, S, Fl]
  std::vector<int64_t> Logits(const TokenBlock& tb) const;  // [B, S, Vl]
  std::vector<int64_t> NormStat(const TokenBlock& tb) const;  // [B·S]: one per token

  // What Forward keeps for backward under no recompute (filter with KeptUnder), in the
  // layer's order; names follow the runtime's stash fields.
  std::vector<StashTensor> ForwardStash(const TokenBlock& tb) const;
  // The forward GEMMs (linear layers first, then the attention products).
  std::vector<GemmShape> ForwardGemms(const TokenBlock& tb) const;
};

// The shapes of a layer of `kind` in `model` on rank `split`.
// REQUIRES: model.Validate() ok; model.TensorParallelProblem(split.tp) empty;
// 0 <= split.tp_rank < split.tp. A violation is a bug and aborts through TRIDENT_CHECK.
LayerShapes MakeLayerShapes(const ModelSpec& model, LayerKind kind, const RankSplit& split);

// The sequence positions of cp rank `cp_rank`'s tokens of a sequence of `seq` tokens, in the
// rank's order: chunks cp_rank and 2·cp − 1 − cp_rank of 2·cp equal chunks (0 .. seq − 1 for
// cp 1). REQUIRES: 2·cp divides seq when cp > 1.
std::vector<int64_t> ContextPositions(int64_t seq, int cp, int cp_rank);

// The product of `dims` (1 for none).
int64_t ElementsOf(const std::vector<int64_t>& dims);

}  // namespace trident
