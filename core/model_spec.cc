#include "core/model_spec.h"

#include <tuple>

#include "core/check.h"
#include "core/document.h"
#include "core/limits.h"
#include "core/yaml_io.h"

namespace trident {

const NameTable<LayerKind>& LayerKindNames() {
  static const NameTable<LayerKind> kNames = {
      {"embedding", LayerKind::kEmbedding},    {"gpt_block", LayerKind::kGptBlock},
      {"llama_block", LayerKind::kLlamaBlock}, {"final_norm", LayerKind::kFinalNorm},
      {"lm_head", LayerKind::kLmHead},         {"mlp_block", LayerKind::kMlpBlock},
      {"generic", LayerKind::kGeneric}};
  return kNames;
}

const NameTable<NormKind>& NormKindNames() {
  static const NameTable<NormKind> kNames = {{"layer_norm", NormKind::kLayerNorm},
                                             {"rms_norm", NormKind::kRmsNorm}};
  return kNames;
}

const NameTable<PositionKind>& PositionKindNames() {
  static const NameTable<PositionKind> kNames = {{"learned", PositionKind::kLearned},
                                                 {"rope", PositionKind::kRope}};
  return kNames;
}

const NameTable<AttentionKind>& AttentionKindNames() {
  static const NameTable<AttentionKind> kNames = {{"unfused", AttentionKind::kUnfused},
                                                  {"flash", AttentionKind::kFlash}};
  return kNames;
}

int ModelSpec::NumLayers() const {
  int count = 0;
  for (const LayerGroup& group : layers) count += group.repeat;
  return count;
}

std::vector<LayerKind> ModelSpec::ExpandLayers() const {
  std::vector<LayerKind> kinds;
  for (const LayerGroup& group : layers) kinds.insert(kinds.end(), group.repeat, group.kind);
  return kinds;
}

bool ModelSpec::IsGeneric() const {
  for (const LayerGroup& group : layers) {
    if (group.kind == LayerKind::kGeneric) return true;
  }
  return false;
}

LayerKind ModelSpec::LayerAt(int index) const {
  int first = 0;
  for (const LayerGroup& group : layers) {
    if (index < first + group.repeat) return group.kind;
    first += group.repeat;
  }
  TRIDENT_CHECK(false) << "layer " << index << " of " << NumLayers();
  return LayerKind::kGptBlock;
}

std::string ModelSpec::TensorParallelProblem(int tp) const {
  if (tp < 1) return "tp must be >= 1, got " + std::to_string(tp);
  const std::pair<const char*, int64_t> sharded[] = {
      {"heads", heads}, {"kv_heads", kv_heads}, {"ffn_hidden", ffn_hidden}};
  for (const auto& [what, value] : sharded) {
    if (value % tp != 0) {
      return "tp " + std::to_string(tp) + " does not divide " + std::to_string(value) + " " + what;
    }
  }
  return "";
}

namespace {

FieldError Positive(const char* key, int64_t value) {
  return {key, "must be positive, got " + std::to_string(value), ""};
}

// Positive and at most `max` (core/limits.h).
FieldCheck CheckSize(const char* key, int64_t value, int64_t max) {
  if (value <= 0) return Positive(key, value);
  if (value <= max) return std::nullopt;
  return FieldError{key,
                    "must be at most " + std::to_string(max) + ", got " + std::to_string(value),
                    "Trident's limit for this key (core/README.md, Limits)"};
}

FieldCheck CheckSizes(const ModelSpec& m) {
  const std::tuple<const char*, int64_t, int64_t> sizes[] = {
      {"vocab_size", m.vocab_size, limits::kMaxVocab},
      {"max_seq_len", m.max_seq_len, limits::kMaxSeqLen},
      {"hidden", m.hidden, limits::kMaxHidden},
      {"heads", m.heads, limits::kMaxHeads},
      {"kv_heads", m.kv_heads, limits::kMaxHeads},
      {"ffn_hidden", m.ffn_hidden, limits::kMaxFfnHidden}};
  for (const auto& [key, value, max] : sizes) {
    if (FieldCheck error = CheckSize(key, value, max)) return error;
  }
  return std::nullopt;
}

FieldCheck CheckShapes(const ModelSpec& m) {
  if (FieldCheck error = CheckSizes(m)) return error;
  if (m.hidden % m.heads != 0) {
    return FieldError{
        "heads",
        std::to_string(m.heads) + " heads do not divide hidden " + std::to_string(m.hidden),
        "pick heads so that hidden / heads is a whole head size (e.g. 64)"};
  }
  if (m.heads % m.kv_heads != 0) {
    return FieldError{"kv_heads",
                      std::to_string(m.kv_heads) + " kv_heads do not divide " +
                          std::to_string(m.heads) + " heads",
                      "each key/value head serves a whole group of query heads"};
  }
  if (m.dropout < 0.0 || m.dropout >= 1.0) {
    return FieldError{"dropout", "must be in [0, 1), got " + FormatDouble(m.dropout), ""};
  }
  if (m.norm_eps <= 0.0) return FieldError{"norm_eps", "must be positive", "1e-5 is usual"};
  if (m.rope_theta <= 0.0) return FieldError{"rope_theta", "must be positive", "10000 is usual"};
  return std::nullopt;
}

FieldCheck CheckLayerGroup(const ModelSpec& m, size_t i) {
  const LayerGroup& group = m.layers[i];
  std::string path = IndexKeyPath("layers", i);
  if (group.repeat < 1 || group.repeat > ModelSpec::kMaxLayers) {
    return FieldError{JoinKeyPath(path, "repeat"),
                      "must be at least 1 and at most " + std::to_string(ModelSpec::kMaxLayers) +
                          ", got " + std::to_string(group.repeat),
                      ""};
  }
  bool first = i == 0;
  bool last = i + 1 == m.layers.size();
  if (group.kind == LayerKind::kEmbedding && (!first || group.repeat != 1)) {
    return FieldError{JoinKeyPath(path, "kind"), "an embedding may only be the first layer, once",
                      "move it to the top of the list"};
  }
  if (group.kind == LayerKind::kLmHead && (!last || group.repeat != 1)) {
    return FieldError{JoinKeyPath(path, "kind"), "an lm_head may only be the last layer, once",
                      "move it to the end of the list"};
  }
  if (group.kind == LayerKind::kLlamaBlock && m.HeadDim() % 2 != 0) {
    return FieldError{
        JoinKeyPath(path, "kind"),
        "llama_block needs an even head size for RoPE, got " + std::to_string(m.HeadDim()), ""};
  }
  return std::nullopt;
}

// A generic model has no shapes: only its sequence length, and generic layers throughout.
FieldCheck CheckGenericModel(const ModelSpec& m) {
  if (FieldCheck error = CheckSize("max_seq_len", m.max_seq_len, limits::kMaxSeqLen)) return error;
  const std::pair<const char*, int64_t> shapes[] = {{"vocab_size", m.vocab_size},
                                                    {"hidden", m.hidden},
                                                    {"heads", m.heads},
                                                    {"kv_heads", m.kv_heads},
                                                    {"ffn_hidden", m.ffn_hidden}};
  for (const auto& [key, value] : shapes) {
    if (value != 0) {
      return FieldError{key,
                        "a model of generic layers has no shapes, got " + std::to_string(value),
                        "remove the key, or replace the generic layers by real ones"};
    }
  }
  if (m.tied_embeddings) {
    return FieldError{"tied_embeddings", "a model of generic layers ties nothing", ""};
  }
  for (size_t i = 0; i < m.layers.size(); ++i) {
    if (m.layers[i].kind != LayerKind::kGeneric) {
      return FieldError{JoinKeyPath(IndexKeyPath("layers", i), "kind"),
                        "a model with generic layers may hold only generic layers",
                        "import the whole model (trident import), or describe it all by kinds"};
    }
  }
  return std::nullopt;
}

FieldCheck CheckLayers(const ModelSpec& m) {
  if (m.layers.empty()) {
    return FieldError{"layers", "a model needs at least one layer",
                      "list layers such as {kind: embedding}, {kind: gpt_block, repeat: 2}"};
  }
  int64_t total = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    if (FieldCheck error = CheckLayerGroup(m, i)) return error;
    total += m.layers[i].repeat;
    if (total > ModelSpec::kMaxLayers) {
      return FieldError{JoinKeyPath(IndexKeyPath("layers", i), "repeat"),
                        "makes " + std::to_string(total) + " layers, more than the " +
                            std::to_string(ModelSpec::kMaxLayers) + " a model may have",
                        ""};
    }
  }
  bool has_embedding = m.layers.front().kind == LayerKind::kEmbedding;
  bool has_head = m.layers.back().kind == LayerKind::kLmHead;
  if (m.tied_embeddings && !(has_embedding && has_head)) {
    return FieldError{"tied_embeddings", "needs both an embedding and an lm_head layer",
                      "set tied_embeddings: false or add the missing layer"};
  }
  return std::nullopt;
}

}  // namespace

FieldCheck ModelSpec::Check() const {
  if (name.empty()) return FieldError{"name", "must not be empty", "name the model"};
  if (FieldCheck error = IsGeneric() ? CheckGenericModel(*this) : CheckShapes(*this)) return error;
  return CheckLayers(*this);
}

std::string ModelSpec::ToString() const {
  if (IsGeneric()) {
    return name + ": " + std::to_string(NumLayers()) +
           " generic layers (costs from a profile only), seq " + std::to_string(max_seq_len);
  }
  return name + ": " + std::to_string(NumLayers()) + " layers, hidden " + std::to_string(hidden) +
         ", heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) + ", ffn " +
         std::to_string(ffn_hidden) + ", vocab " + std::to_string(vocab_size) + ", seq " +
         std::to_string(max_seq_len) + (tied_embeddings ? ", tied" : "");
}

Status CheckNotGeneric(const ModelSpec& model, std::string_view what, std::string_view hint) {
  if (!model.IsGeneric()) return Status::Ok();
  return FailedPrecondition("model " + model.name +
                            " has generic layers (imported costs, no implementation), so " +
                            std::string(what) + "; " + std::string(hint));
}

namespace {

Status ReadLayers(YamlMap& map, ModelSpec* spec) {
  spec->layers.clear();
  return map.ForEachMap("layers", [spec](YamlMap& item, int) -> Status {
    LayerGroup group;
    TRIDENT_RETURN_IF_ERROR(item.GetEnum("kind", LayerKindNames(), &group.kind));
    TRIDENT_RETURN_IF_ERROR(item.GetOptional("repeat", &group.repeat));
    spec->layers.push_back(group);
    return Status::Ok();
  });
}

// The keys of a model that has shapes (every model but a generic one), after max_seq_len.
Status ReadShapeFields(YamlMap& map, ModelSpec* spec) {
  TRIDENT_RETURN_IF_ERROR(map.Get("hidden", &spec->hidden));
  TRIDENT_RETURN_IF_ERROR(map.Get("heads", &spec->heads));
  spec->kv_heads = spec->heads;
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("kv_heads", &spec->kv_heads));
  TRIDENT_RETURN_IF_ERROR(map.Get("ffn_hidden", &spec->ffn_hidden));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("norm", NormKindNames(), &spec->norm));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("positions", PositionKindNames(), &spec->positions));
  TRIDENT_RETURN_IF_ERROR(map.GetOptionalEnum("attention", AttentionKindNames(), &spec->attention));
  TRIDENT_RETURN_IF_ERROR(map.Get("tied_embeddings", &spec->tied_embeddings));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("dropout", &spec->dropout));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("norm_eps", &spec->norm_eps));
  return map.GetOptional("rope_theta", &spec->rope_theta);
}

// Every key but the layers, in the files' order.
void WriteScalarFields(const ModelSpec& spec, YamlWriter& out) {
  out.Field("name", spec.name);
  if (spec.IsGeneric()) {
    out.Field("max_seq_len", spec.max_seq_len).Field("dtype", DTypeName(spec.dtype));
    return;
  }
  out.Field("vocab_size", spec.vocab_size)
      .Field("max_seq_len", spec.max_seq_len)
      .Field("hidden", spec.hidden)
      .Field("heads", spec.heads)
      .Field("kv_heads", spec.kv_heads)
      .Field("ffn_hidden", spec.ffn_hidden)
      .Field("norm", NameOf(NormKindNames(), spec.norm))
      .Field("positions", NameOf(PositionKindNames(), spec.positions))
      .Field("attention", NameOf(AttentionKindNames(), spec.attention))
      .Field("tied_embeddings", spec.tied_embeddings)
      .Field("dropout", spec.dropout)
      .Field("norm_eps", spec.norm_eps)
      .Field("rope_theta", spec.rope_theta)
      .Field("dtype", DTypeName(spec.dtype));
}

}  // namespace

// The layers are read first, to know whether shape keys belong (a generic model has none, and
// Finish() then rejects any it gives); their error is reported after the other keys', in the
// files' key order.
Status ReadModelFields(YamlMap& map, ModelSpec* spec) {
  TRIDENT_RETURN_IF_ERROR(map.Get("name", &spec->name));
  const Status layers = ReadLayers(map, spec);
  const bool generic = spec->IsGeneric();  // of the groups read, when a later one is bad
  if (!generic) TRIDENT_RETURN_IF_ERROR(map.Get("vocab_size", &spec->vocab_size));
  TRIDENT_RETURN_IF_ERROR(map.Get("max_seq_len", &spec->max_seq_len));
  if (!generic) TRIDENT_RETURN_IF_ERROR(ReadShapeFields(map, spec));
  TRIDENT_RETURN_IF_ERROR(map.GetOptionalEnum("dtype", DTypeNames(), &spec->dtype));
  return layers;
}

void WriteModelFields(const ModelSpec& spec, YamlWriter& out) {
  WriteScalarFields(spec, out);
  out.Key("layers").BeginList();
  for (const LayerGroup& group : spec.layers) {
    out.BeginMap(/*flow=*/true).Field("kind", NameOf(LayerKindNames(), group.kind));
    if (group.repeat != 1) out.Field("repeat", group.repeat);
    out.EndMap();
  }
  out.EndList();
}

StatusOr<ModelSpec> ParseModelSpec(std::string_view text, const std::string& file) {
  return ParseDocument<ModelSpec>(text, file, "model", ReadModelFields);
}

StatusOr<ModelSpec> LoadModelSpec(const std::string& path) {
  return LoadDocument<ModelSpec>(path, "model", ReadModelFields);
}

std::string ModelSpecToYaml(const ModelSpec& spec) {
  YamlWriter out;
  out.BeginMap();
  WriteDocumentHeader(out, "model", ModelSpec::kFormatVersion);
  WriteModelFields(spec, out);
  out.EndMap();
  return out.Text();
}

}  // namespace trident
