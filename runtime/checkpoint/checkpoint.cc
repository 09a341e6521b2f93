#include "runtime/checkpoint/checkpoint.h"

#include <charconv>
#include <utility>

#include "core/file_util.h"

namespace trident {
namespace {

constexpr char kFormatVersionKey[] = "format_version";
constexpr char kStepKey[] = "step";
constexpr char kModelKey[] = "model";

bool IsReservedKey(const std::string& key) {
  return key == kFormatVersionKey || key == kStepKey || key == kModelKey;
}

std::string Quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

// The whole of `text` as a base-10 integer, or nullopt.
std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

StatusOr<MetadataMap> MetadataToMap(const CheckpointMetadata& metadata) {
  MetadataMap map;
  for (const auto& [key, value] : metadata.extra) {
    if (IsReservedKey(key)) {
      return InvalidArgument("metadata key " + Quoted(key) + " is reserved; set it through " +
                             "CheckpointMetadata's own field");
    }
    map[key] = value;
  }
  map[kFormatVersionKey] = std::to_string(metadata.format_version);
  map[kStepKey] = std::to_string(metadata.step);
  map[kModelKey] = metadata.model;
  return map;
}

Status CheckFormatVersion(const MetadataMap& map) {
  auto version = map.find(kFormatVersionKey);
  if (version == map.end()) {
    return InvalidArgument("not a Trident checkpoint: __metadata__ has no format_version; " +
                           std::string("hint: checkpoints from other tools need converting"));
  }
  if (ParseInt(version->second) != CheckpointMetadata::kFormatVersion) {
    return InvalidArgument("format_version " + Quoted(version->second) +
                           " is not supported (this build reads " +
                           std::to_string(CheckpointMetadata::kFormatVersion) +
                           "); hint: use the Trident version that wrote it");
  }
  return Status::Ok();
}

StatusOr<CheckpointMetadata> MetadataFromMap(const MetadataMap& map) {
  TRIDENT_RETURN_IF_ERROR(CheckFormatVersion(map));
  CheckpointMetadata metadata;
  auto step = map.find(kStepKey);
  std::optional<int64_t> step_value;
  if (step != map.end()) step_value = ParseInt(step->second);
  if (!step_value || *step_value < 0) {
    return InvalidArgument("__metadata__ step must be a non-negative integer, got " +
                           (step == map.end() ? std::string("nothing") : Quoted(step->second)));
  }
  metadata.step = *step_value;
  auto model = map.find(kModelKey);
  if (model == map.end()) return InvalidArgument("__metadata__ has no model name");
  metadata.model = model->second;
  for (const auto& [key, value] : map) {
    if (!IsReservedKey(key)) metadata.extra[key] = value;
  }
  return metadata;
}

}  // namespace

std::string ParamKey(int layer, std::string_view param) {
  return "layers." + std::to_string(layer) + "." + std::string(param);
}

std::string ExpAvgKey(int layer, std::string_view param) {
  return "optimizer." + ParamKey(layer, param) + ".exp_avg";
}

std::string ExpAvgSqKey(int layer, std::string_view param) {
  return "optimizer." + ParamKey(layer, param) + ".exp_avg_sq";
}

void Checkpoint::SetParam(int layer, std::string_view param, HostTensor value) {
  tensors[ParamKey(layer, param)] = std::move(value);
}

void Checkpoint::SetOptimizerState(int layer, std::string_view param, HostTensor exp_avg,
                                   HostTensor exp_avg_sq) {
  tensors[ExpAvgKey(layer, param)] = std::move(exp_avg);
  tensors[ExpAvgSqKey(layer, param)] = std::move(exp_avg_sq);
}

StatusOr<std::string> SerializeCheckpoint(const Checkpoint& checkpoint) {
  TRIDENT_ASSIGN_OR_RETURN(MetadataMap metadata, MetadataToMap(checkpoint.metadata));
  return SerializeSafetensors(checkpoint.tensors, metadata);
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  StatusOr<std::string> bytes = SerializeCheckpoint(checkpoint);
  if (!bytes.ok()) return bytes.status().WithPrefix(path);
  return WriteFileAtomic(path, *bytes);
}

CheckpointReader::CheckpointReader(std::string path, std::string bytes, SafetensorsIndex index,
                                   CheckpointMetadata metadata)
    : path_(std::move(path)),
      bytes_(std::move(bytes)),
      index_(std::move(index)),
      metadata_(std::move(metadata)) {}

StatusOr<CheckpointMetadata> ReadCheckpointMetadata(const std::string& path) {
  StatusOr<MetadataMap> map = ReadSafetensorsMetadata(path);
  if (!map.ok()) {
    if (map.status().code() != StatusCode::kNotFound) return map.status();
    return NotFound(path + ": no such checkpoint; hint: check the checkpoint path");
  }
  StatusOr<CheckpointMetadata> metadata = MetadataFromMap(*map);
  if (!metadata.ok()) return metadata.status().WithPrefix(path);
  return metadata;
}

StatusOr<CheckpointReader> CheckpointReader::Open(const std::string& path) {
  StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) {
    if (bytes.status().code() != StatusCode::kNotFound) return bytes.status();
    return NotFound(path + ": no such checkpoint; hint: check the checkpoint path");
  }
  TRIDENT_ASSIGN_OR_RETURN(SafetensorsIndex index, ParseSafetensorsIndex(*bytes, path));
  StatusOr<CheckpointMetadata> metadata = MetadataFromMap(index.metadata);
  if (!metadata.ok()) return metadata.status().WithPrefix(path);
  return CheckpointReader(path, std::move(bytes).value(), std::move(index),
                          std::move(metadata).value());
}

std::vector<std::string> CheckpointReader::TensorNames() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : index_.tensors) names.push_back(name);
  return names;
}

Status CheckpointReader::MissingTensor(const std::string& name, const Shape& expected) const {
  return NotFound(path_ + ": tensor " + Quoted(name) + " (expected shape " +
                  ShapeToString(expected) + ") is missing; the checkpoint holds " +
                  std::to_string(index_.tensors.size()) + " tensors of model " +
                  Quoted(metadata_.model) + " at step " + std::to_string(metadata_.step) +
                  "; hint: resume with the model the checkpoint was written for");
}

StatusOr<HostTensor> CheckpointReader::ReadSlice(const std::string& name,
                                                 const Shape& expected_full_shape,
                                                 const Slice& slice) const {
  auto found = index_.tensors.find(name);
  if (found == index_.tensors.end()) return MissingTensor(name, expected_full_shape);
  const SafetensorsEntry& entry = found->second;
  const std::string where = path_ + ": tensor " + Quoted(name);
  if (entry.shape != expected_full_shape) {
    return InvalidArgument(where + " has shape " + ShapeToString(entry.shape) + " but the model " +
                           "expects " + ShapeToString(expected_full_shape) + "; hint: the " +
                           "checkpoint was written for model " + Quoted(metadata_.model));
  }
  Status slice_ok = CheckSlice(entry.shape, slice);
  if (!slice_ok.ok()) return slice_ok.WithPrefix(where);
  return ReadSafetensorsEntry(bytes_, index_, entry, slice);
}

Checkpoint CheckpointReader::ReadAll() const {
  Checkpoint checkpoint;
  checkpoint.metadata = metadata_;
  for (const auto& [name, entry] : index_.tensors) {
    checkpoint.tensors[name] = ReadSafetensorsEntry(bytes_, index_, entry, Slice::Full());
  }
  return checkpoint;
}

}  // namespace trident
