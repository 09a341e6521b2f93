#include "core/profile.h"

#include <cmath>
#include <tuple>

#include "core/document.h"
#include "core/limits.h"
#include "core/yaml_io.h"

namespace trident {

const NameTable<ProfileSource>& ProfileSourceNames() {
  static const NameTable<ProfileSource> kNames = {{"measured", ProfileSource::kMeasured},
                                                  {"analytic", ProfileSource::kAnalytic},
                                                  {"imported", ProfileSource::kImported}};
  return kNames;
}

const ProfileEntry* Profile::Find(int index, int micro_batch, int tp, bool sequence_parallel,
                                  int cp) const {
  for (const LayerProfile& layer : layers) {
    if (index < layer.first_layer || index >= layer.first_layer + layer.num_layers) continue;
    for (const ProfileEntry& entry : layer.entries) {
      if (entry.micro_batch == micro_batch && entry.tp == tp &&
          entry.sequence_parallel == sequence_parallel && entry.cp == cp) {
        return &entry;
      }
    }
  }
  return nullptr;
}

namespace {

FieldCheck CheckEntryShape(const ProfileEntry& e, int64_t seq_len, const std::string& path) {
  const std::string micro_batch = JoinKeyPath(path, "micro_batch");
  if (FieldCheck error = CheckRange(micro_batch, e.micro_batch, 1, limits::kMaxMicroBatch)) {
    return error;
  }
  if (FieldCheck error = CheckRange(JoinKeyPath(path, "tp"), e.tp, 1, limits::kMaxHeads)) {
    return error;
  }
  if (FieldCheck error = CheckRange(JoinKeyPath(path, "cp"), e.cp, 1, limits::kMaxDevices)) {
    return error;
  }
  if (e.cp > 1 && seq_len % (2 * e.cp) != 0) {
    return FieldError{JoinKeyPath(path, "cp"),
                      "cp " + std::to_string(e.cp) + " cannot split seq_len " +
                          std::to_string(seq_len) + " into 2·cp equal chunks",
                      "use a cp with 2·cp dividing seq_len"};
  }
  const int64_t local_seq = seq_len / e.cp;  // the tokens of a sequence on one cp rank
  if (e.sequence_parallel && (e.tp == 1 || local_seq % e.tp != 0)) {
    return FieldError{JoinKeyPath(path, "sequence_parallel"),
                      "needs tp > 1 dividing seq_len / cp = " + std::to_string(local_seq) +
                          ", got tp " + std::to_string(e.tp),
                      "remove the key from this entry"};
  }
  if (e.micro_batch * seq_len > limits::kMaxMicroBatchTokens) {
    return FieldError{micro_batch,
                      "micro_batch " + std::to_string(e.micro_batch) + " × seq_len " +
                          std::to_string(seq_len) + " tokens is more than the limit " +
                          std::to_string(limits::kMaxMicroBatchTokens),
                      "Trident's limit for one micro-batch (core/README.md, Limits)"};
  }
  return std::nullopt;
}

FieldCheck CheckEntry(const ProfileEntry& e, int64_t seq_len, const std::string& path) {
  if (FieldCheck error = CheckEntryShape(e, seq_len, path)) return error;
  const std::pair<const char*, double> times[] = {
      {"fwd_ms", e.fwd_ms},
      {"bwd_input_ms", e.bwd_input_ms},
      {"bwd_weight_ms", e.bwd_weight_ms},
      {"recompute_selective_ms", e.recompute_selective_ms},
      {"recompute_full_ms", e.recompute_full_ms},
      {"spread_pct", e.spread_pct}};
  for (const auto& [key, value] : times) {
    if (value < 0) return FieldError{JoinKeyPath(path, key), "must not be negative", ""};
  }
  const std::pair<const char*, int64_t> sizes[] = {
      {"param_bytes", e.param_bytes},
      {"grad_bytes", e.grad_bytes},
      {"optimizer_bytes", e.optimizer_bytes},
      {"output_bytes", e.output_bytes},
      {"stashed_bytes.none", e.stashed_none_bytes},
      {"stashed_bytes.selective", e.stashed_selective_bytes},
      {"stashed_bytes.full", e.stashed_full_bytes},
      {"workspace_bytes.none", e.workspace_none_bytes},
      {"workspace_bytes.selective", e.workspace_selective_bytes},
      {"workspace_bytes.full", e.workspace_full_bytes}};
  for (const auto& [key, value] : sizes) {
    if (FieldCheck error = CheckRange(JoinKeyPath(path, key), value, 0, limits::kMaxLayerBytes)) {
      return error;
    }
  }
  return std::nullopt;
}

FieldCheck CheckLayer(const LayerProfile& layer, int64_t seq_len, int64_t expected_first,
                      size_t i) {
  std::string path = IndexKeyPath("layers", i);
  if (layer.first_layer != expected_first) {
    return FieldError{JoinKeyPath(path, "first_layer"),
                      "expected " + std::to_string(expected_first) +
                          " (layers must be listed in "
                          "order, each index once), got " +
                          std::to_string(layer.first_layer),
                      ""};
  }
  if (FieldCheck error =
          CheckRange(JoinKeyPath(path, "num_layers"), layer.num_layers, 1, limits::kMaxLayers)) {
    return error;
  }
  if (layer.entries.empty()) {
    return FieldError{JoinKeyPath(path, "entries"), "needs at least one entry", ""};
  }
  for (size_t j = 0; j < layer.entries.size(); ++j) {
    std::string entry_path = IndexKeyPath(JoinKeyPath(path, "entries"), j);
    if (FieldCheck error = CheckEntry(layer.entries[j], seq_len, entry_path)) return error;
    for (size_t k = 0; k < j; ++k) {
      const ProfileEntry &a = layer.entries[k], &b = layer.entries[j];
      if (a.micro_batch == b.micro_batch && a.tp == b.tp &&
          a.sequence_parallel == b.sequence_parallel && a.cp == b.cp) {
        return FieldError{entry_path,
                          "duplicate entry for this micro_batch, tp, sequence_parallel and cp",
                          "keep one entry per (micro_batch, tp, sequence_parallel, cp)"};
      }
    }
  }
  return std::nullopt;
}

FieldCheck CheckCounts(const Profile& p) {
  const std::tuple<const char*, int64_t, int64_t, int64_t> counts[] = {
      {"num_layers", p.num_layers, 1, limits::kMaxLayers},
      {"seq_len", p.seq_len, 1, limits::kMaxSeqLen},
      {"threads", p.threads, 1, limits::kMaxThreads},
      {"method.warmup", p.method.warmup, 0, limits::kMaxRepeats},
      {"method.repeats", p.method.repeats, 0, limits::kMaxRepeats}};
  for (const auto& [key, value, min, max] : counts) {
    if (FieldCheck error = CheckRange(key, value, min, max)) return error;
  }
  return std::nullopt;
}

}  // namespace

FieldCheck Profile::Check() const {
  if (model.empty()) return FieldError{"model", "must name the profiled model", ""};
  if (FieldCheck error = CheckCounts(*this)) return error;
  if (!(method.load_factor >= 1 && std::isfinite(method.load_factor))) {
    return FieldError{"method.load_factor", "must be a number >= 1",
                      "leave it out, or profile again: the profiler writes it"};
  }
  if (layers.empty()) return FieldError{"layers", "needs at least one layer", ""};
  int64_t next = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (FieldCheck error = CheckLayer(layers[i], seq_len, next, i)) return error;
    next += layers[i].num_layers;
  }
  if (next != num_layers) {
    return FieldError{
        "layers",
        "cover " + std::to_string(next) + " layers but num_layers is " + std::to_string(num_layers),
        "profile every layer of the model, or fix num_layers"};
  }
  return std::nullopt;
}

namespace {

// The figure of `mode` among an entry's three.
template <typename T>
T ByMode(RecomputeMode mode, T none, T selective, T full) {
  if (mode == RecomputeMode::kSelective) return selective;
  if (mode == RecomputeMode::kFull) return full;
  return none;
}

}  // namespace

int64_t ProfileEntry::StashedBytes(RecomputeMode mode) const {
  return ByMode(mode, stashed_none_bytes, stashed_selective_bytes, stashed_full_bytes);
}

int64_t ProfileEntry::WorkspaceBytes(RecomputeMode mode) const {
  return ByMode(mode, workspace_none_bytes, workspace_selective_bytes, workspace_full_bytes);
}

double ProfileEntry::RecomputeMs(RecomputeMode mode) const {
  return ByMode(mode, 0.0, recompute_selective_ms, recompute_full_ms);
}

std::string Profile::ToString() const {
  return model + " on " + device + " (" + NameOf(ProfileSourceNames(), method.source) + ", " +
         DTypeName(dtype) + ", seq " + std::to_string(seq_len) + ", " +
         std::to_string(layers.size()) + " distinct layers of " + std::to_string(num_layers) + ")";
}

namespace {

// A {none, selective, full} map of byte counts, one per recompute mode.
Status ReadByMode(YamlMap& item, std::string_view key, int64_t* none, int64_t* selective,
                  int64_t* full) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, item.GetMap(key));
  TRIDENT_RETURN_IF_ERROR(map.Get("none", none));
  TRIDENT_RETURN_IF_ERROR(map.Get("selective", selective));
  TRIDENT_RETURN_IF_ERROR(map.Get("full", full));
  return map.Finish();
}

Status ReadEntry(YamlMap& item, std::vector<ProfileEntry>* entries) {
  ProfileEntry e;
  TRIDENT_RETURN_IF_ERROR(item.Get("micro_batch", &e.micro_batch));
  TRIDENT_RETURN_IF_ERROR(item.Get("tp", &e.tp));
  TRIDENT_RETURN_IF_ERROR(item.GetOptional("sequence_parallel", &e.sequence_parallel));
  TRIDENT_RETURN_IF_ERROR(item.GetOptional("cp", &e.cp));
  TRIDENT_RETURN_IF_ERROR(item.Get("fwd_ms", &e.fwd_ms));
  TRIDENT_RETURN_IF_ERROR(item.Get("bwd_input_ms", &e.bwd_input_ms));
  TRIDENT_RETURN_IF_ERROR(item.Get("bwd_weight_ms", &e.bwd_weight_ms));
  TRIDENT_RETURN_IF_ERROR(item.Get("recompute_selective_ms", &e.recompute_selective_ms));
  TRIDENT_RETURN_IF_ERROR(item.Get("recompute_full_ms", &e.recompute_full_ms));
  TRIDENT_RETURN_IF_ERROR(item.GetOptional("spread_pct", &e.spread_pct));
  TRIDENT_RETURN_IF_ERROR(item.Get("param_bytes", &e.param_bytes));
  TRIDENT_RETURN_IF_ERROR(item.Get("grad_bytes", &e.grad_bytes));
  TRIDENT_RETURN_IF_ERROR(item.Get("optimizer_bytes", &e.optimizer_bytes));
  TRIDENT_RETURN_IF_ERROR(item.Get("output_bytes", &e.output_bytes));
  TRIDENT_RETURN_IF_ERROR(ReadByMode(item, "stashed_bytes", &e.stashed_none_bytes,
                                     &e.stashed_selective_bytes, &e.stashed_full_bytes));
  TRIDENT_RETURN_IF_ERROR(ReadByMode(item, "workspace_bytes", &e.workspace_none_bytes,
                                     &e.workspace_selective_bytes, &e.workspace_full_bytes));
  entries->push_back(e);
  return Status::Ok();
}

Status ReadLayer(YamlMap& item, std::vector<LayerProfile>* layers) {
  LayerProfile layer;
  TRIDENT_RETURN_IF_ERROR(item.Get("first_layer", &layer.first_layer));
  TRIDENT_RETURN_IF_ERROR(item.GetOptional("num_layers", &layer.num_layers));
  TRIDENT_RETURN_IF_ERROR(item.GetEnum("kind", LayerKindNames(), &layer.kind));
  TRIDENT_RETURN_IF_ERROR(item.ForEachMap(
      "entries", [&layer](YamlMap& entry, int) { return ReadEntry(entry, &layer.entries); }));
  layers->push_back(std::move(layer));
  return Status::Ok();
}

Status ReadProfile(YamlMap& map, Profile* p) {
  TRIDENT_RETURN_IF_ERROR(map.Get("model", &p->model));
  TRIDENT_RETURN_IF_ERROR(map.Get("num_layers", &p->num_layers));
  TRIDENT_RETURN_IF_ERROR(map.Get("seq_len", &p->seq_len));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("dtype", DTypeNames(), &p->dtype));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("device_kind", DeviceKindNames(), &p->device_kind));
  TRIDENT_RETURN_IF_ERROR(map.Get("device", &p->device));
  TRIDENT_RETURN_IF_ERROR(map.Get("threads", &p->threads));
  TRIDENT_RETURN_IF_ERROR(map.Get("build", &p->build));
  TRIDENT_RETURN_IF_ERROR(map.Get("date", &p->date));
  TRIDENT_ASSIGN_OR_RETURN(YamlMap method, map.GetMap("method"));
  TRIDENT_RETURN_IF_ERROR(method.GetEnum("source", ProfileSourceNames(), &p->method.source));
  TRIDENT_RETURN_IF_ERROR(method.GetOptional("warmup", &p->method.warmup));
  TRIDENT_RETURN_IF_ERROR(method.GetOptional("repeats", &p->method.repeats));
  TRIDENT_RETURN_IF_ERROR(method.GetOptional("load_factor", &p->method.load_factor));
  TRIDENT_RETURN_IF_ERROR(method.Finish());
  return map.ForEachMap("layers", [p](YamlMap& item, int) { return ReadLayer(item, &p->layers); });
}

void WriteByMode(YamlWriter& out, std::string_view key, int64_t none, int64_t selective,
                 int64_t full) {
  out.Key(key).BeginMap(/*flow=*/true);
  out.Field("none", none).Field("selective", selective).Field("full", full).EndMap();
}

void WriteEntry(YamlWriter& out, const ProfileEntry& e) {
  out.BeginMap().Field("micro_batch", e.micro_batch).Field("tp", e.tp);
  if (e.sequence_parallel) out.Field("sequence_parallel", true);
  if (e.cp > 1) out.Field("cp", e.cp);
  out.Field("fwd_ms", e.fwd_ms)
      .Field("bwd_input_ms", e.bwd_input_ms)
      .Field("bwd_weight_ms", e.bwd_weight_ms)
      .Field("recompute_selective_ms", e.recompute_selective_ms)
      .Field("recompute_full_ms", e.recompute_full_ms)
      .Field("spread_pct", e.spread_pct)
      .Field("param_bytes", e.param_bytes)
      .Field("grad_bytes", e.grad_bytes)
      .Field("optimizer_bytes", e.optimizer_bytes)
      .Field("output_bytes", e.output_bytes);
  WriteByMode(out, "stashed_bytes", e.stashed_none_bytes, e.stashed_selective_bytes,
              e.stashed_full_bytes);
  WriteByMode(out, "workspace_bytes", e.workspace_none_bytes, e.workspace_selective_bytes,
              e.workspace_full_bytes);
  out.EndMap();
}

void WriteLayer(YamlWriter& out, const LayerProfile& layer) {
  out.BeginMap()
      .Field("first_layer", layer.first_layer)
      .Field("num_layers", layer.num_layers)
      .Field("kind", NameOf(LayerKindNames(), layer.kind));
  out.Key("entries").BeginList();
  for (const ProfileEntry& e : layer.entries) WriteEntry(out, e);
  out.EndList().EndMap();
}

}  // namespace

StatusOr<Profile> ParseProfile(std::string_view text, const std::string& file) {
  return ParseDocument<Profile>(text, file, "profile", ReadProfile);
}

StatusOr<Profile> LoadProfile(const std::string& path) {
  return LoadDocument<Profile>(path, "profile", ReadProfile);
}

std::string ProfileToYaml(const Profile& p) {
  YamlWriter out;
  out.BeginMap();
  WriteDocumentHeader(out, "profile", Profile::kFormatVersion);
  out.Field("model", p.model)
      .Field("num_layers", p.num_layers)
      .Field("seq_len", p.seq_len)
      .Field("dtype", DTypeName(p.dtype))
      .Field("device_kind", NameOf(DeviceKindNames(), p.device_kind))
      .Field("device", p.device)
      .Field("threads", p.threads)
      .Field("build", p.build)
      .Field("date", p.date);
  out.Key("method").BeginMap();
  out.Field("source", NameOf(ProfileSourceNames(), p.method.source))
      .Field("warmup", p.method.warmup)
      .Field("repeats", p.method.repeats)
      .Field("load_factor", p.method.load_factor)
      .EndMap();
  out.Key("layers").BeginList();
  for (const LayerProfile& layer : p.layers) WriteLayer(out, layer);
  out.EndList().EndMap();
  return out.Text();
}

}  // namespace trident
