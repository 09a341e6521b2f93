// ModelSpec: a model as an ordered list of layers with model-wide hyper-parameters.
//
// File form (configs/models/*.yaml; see core/README.md):
//   format_version: 1
//   kind: model
//   name: gpt2-small
//   vocab_size: 50257
//   ...
//   layers:
//     - {kind: embedding}
//     - {kind: gpt_block, repeat: 12}
//     - {kind: final_norm}
//     - {kind: lm_head}
// A generic model (every layer `generic`, imported from another tool's profile) gives only
// name, max_seq_len, dtype and layers: its costs come from its profile alone.
// Layers are numbered 0..NumLayers()-1 after expanding `repeat`; stage cuts, profiles and
// checkpoints all use these indices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/field_error.h"
#include "core/limits.h"
#include "core/names.h"
#include "core/status.h"

namespace trident {

class YamlMap;
class YamlWriter;

enum class LayerKind {
  kEmbedding,   // token (+ learned position) embedding
  kGptBlock,    // pre-LayerNorm, causal multi-head attention, GELU MLP, biases
  kLlamaBlock,  // RMSNorm, grouped-query attention with RoPE, SwiGLU MLP, no biases
  kFinalNorm,   // LayerNorm or RMSNorm, per the model's `norm`
  kLmHead,      // projection to the vocabulary and mean cross-entropy loss
  kMlpBlock,    // x + fc2(gelu(fc1(x))), for small tests
  // A layer known only by its profiled costs (`trident import`): no shapes, no analytic
  // costs, and no implementation, so it can be planned and simulated but never run. A model
  // with a generic layer has only generic layers and no shape keys (hidden, heads, ...).
  kGeneric,
};
const NameTable<LayerKind>& LayerKindNames();

enum class NormKind { kLayerNorm, kRmsNorm };
const NameTable<NormKind>& NormKindNames();

enum class PositionKind { kLearned, kRope };
const NameTable<PositionKind>& PositionKindNames();

// How attention is computed. Both give the same values; they differ in time and memory:
// - unfused: the scores Q·Kᵀ are written out, softmax (and dropout) run over them and P·V
//   reads them back; the softmax output [B, A, S, S] is kept for backward (Megatron-LM's
//   "unfused" and "local" backends; Trident's own layers);
// - flash: one kernel per pass tiles the scores through on-chip memory and keeps only the
//   softmax's log-sum-exp per query; backward recomputes the scores, and causal masking skips
//   the tiles above the diagonal (Dao et al., "FlashAttention-2", 2023; Megatron-LM's "flash"
//   and "fused" backends, PyTorch's SDPA).
enum class AttentionKind { kUnfused, kFlash };
const NameTable<AttentionKind>& AttentionKindNames();

struct LayerGroup {
  LayerKind kind = LayerKind::kGptBlock;
  int repeat = 1;
  bool operator==(const LayerGroup&) const = default;
};

struct ModelSpec {
  static constexpr int kFormatVersion = 1;
  // Layers after `repeat`; the other sizes are bounded by core/limits.h too.
  static constexpr int kMaxLayers = limits::kMaxLayers;

  std::string name;
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;  // longest sequence (learned positions, RoPE context)
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;    // grouped-query attention; equals heads for multi-head attention
  int64_t ffn_hidden = 0;  // MLP inner width (4·hidden for GPT)
  NormKind norm = NormKind::kLayerNorm;
  PositionKind positions = PositionKind::kLearned;
  AttentionKind attention = AttentionKind::kUnfused;  // absent from a file: unfused
  bool tied_embeddings = false;
  double dropout = 0.0;  // probability; > 0 adds 1-byte masks to stashed activations
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  DType dtype = DType::kFp32;  // the training dtype the preset is meant for
  std::vector<LayerGroup> layers;

  bool operator==(const ModelSpec&) const = default;

  int NumLayers() const;
  // The kind of layer `index`. REQUIRES: 0 <= index < NumLayers().
  LayerKind LayerAt(int index) const;
  std::vector<LayerKind> ExpandLayers() const;
  // Whether any layer is generic (then every layer is, once Check() passes).
  bool IsGeneric() const;
  int64_t HeadDim() const { return heads > 0 ? hidden / heads : 0; }

  // Why tensor-parallel degree `tp` cannot shard this model ("tp 5 does not divide 12
  // heads"), or "" when it can: tp must divide heads, kv_heads and ffn_hidden.
  std::string TensorParallelProblem(int tp) const;

  FieldCheck Check() const;
  Status Validate() const { return ToStatus(Check()); }
  std::string ToString() const;  // one line: "gpt2-small: 15 layers, hidden 768, ..."
};

// Ok unless `model` has generic layers; then FailedPrecondition: "model resnet50 has generic
// layers (imported costs, no implementation), so `what`; `hint`". `what` names the refused use,
// e.g. "it has no analytic costs".
Status CheckNotGeneric(const ModelSpec& model, std::string_view what, std::string_view hint);

// Reads the model fields of `map` (the file's top level, or a plan's `model:` section).
Status ReadModelFields(YamlMap& map, ModelSpec* spec);
void WriteModelFields(const ModelSpec& spec, YamlWriter& out);

StatusOr<ModelSpec> ParseModelSpec(std::string_view text, const std::string& file);
StatusOr<ModelSpec> LoadModelSpec(const std::string& path);
std::string ModelSpecToYaml(const ModelSpec& spec);

}  // namespace trident
