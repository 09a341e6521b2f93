#include "runtime/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/check.h"

namespace trident {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping here");

using Json = nlohmann::json;
constexpr uint64_t kLengthBytes = 8;
constexpr uint64_t kF32Bytes = sizeof(float);

std::string Quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string EncodeLength(uint64_t length) {
  std::string bytes(kLengthBytes, '\0');
  for (uint64_t i = 0; i < kLengthBytes; ++i)
    bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return bytes;
}

uint64_t DecodeLength(std::string_view bytes) {
  uint64_t length = 0;
  for (uint64_t i = 0; i < kLengthBytes; ++i) {
    length |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  }
  return length;
}

// The JSON header of `tensors` laid out contiguously in name order; their total bytes in
// `data_bytes`.
Status BuildHeader(const TensorMap& tensors, const MetadataMap& metadata, Json* header,
                   uint64_t* data_bytes) {
  *header = Json::object();
  if (!metadata.empty()) (*header)[kSafetensorsMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    std::optional<int64_t> count = CountElements(tensor.shape);
    if (name == kSafetensorsMetadataKey) {
      return InvalidArgument("a tensor cannot be named " + Quoted(name));
    }
    if (!count || *count != static_cast<int64_t>(tensor.values.size())) {
      return InvalidArgument("tensor " + Quoted(name) + " has shape " +
                             ShapeToString(tensor.shape) + " but " +
                             std::to_string(tensor.values.size()) + " values");
    }
    uint64_t end = offset + tensor.values.size() * kF32Bytes;
    Json entry = Json::object();
    entry["dtype"] = "F32";
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = Json::array({offset, end});
    (*header)[name] = std::move(entry);
    offset = end;
  }
  *data_bytes = offset;
  return Status::Ok();
}

// The header length at the start of `bytes`, a file of `file_bytes` bytes.
StatusOr<uint64_t> HeaderLength(std::string_view bytes, uint64_t file_bytes) {
  if (bytes.size() < kLengthBytes) {
    return InvalidArgument("truncated: " + std::to_string(bytes.size()) +
                           " bytes, fewer than the 8-byte header length a safetensors file " +
                           "starts with");
  }
  const uint64_t length = DecodeLength(bytes);
  const uint64_t after = file_bytes - kLengthBytes;
  if (length > after) {
    return InvalidArgument("header length " + std::to_string(length) +
                           " runs past the end of the file (" + std::to_string(after) +
                           " bytes follow the length); the file is truncated or is not a " +
                           "safetensors file");
  }
  if (length > kMaxSafetensorsHeaderBytes) {
    return InvalidArgument("header length " + std::to_string(length) +
                           " exceeds the safetensors limit of 100 MiB; the file is corrupt");
  }
  return length;
}

Status ParseJson(std::string_view text, Json* json) {
  if (text.empty() || text.front() != '{') {
    return InvalidArgument("malformed JSON header: it must start with '{'");
  }
  try {
    *json = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("malformed JSON header: ") + e.what());
  }
  return Status::Ok();
}

StatusOr<MetadataMap> ParseMetadata(const Json& json) {
  if (!json.is_object()) {
    return InvalidArgument(std::string(kSafetensorsMetadataKey) +
                           " must be an object of strings, got " + json.type_name());
  }
  MetadataMap metadata;
  for (const auto& item : json.items()) {
    if (!item.value().is_string()) {
      return InvalidArgument(std::string(kSafetensorsMetadataKey) + " must map strings to " +
                             "strings; key " + Quoted(item.key()) + " holds a " +
                             item.value().type_name());
    }
    metadata[item.key()] = item.value().get<std::string>();
  }
  return metadata;
}

// Rejects keys other than dtype, shape, data_offsets, and dtypes other than F32.
Status CheckEntryKeysAndDtype(const Json& json) {
  if (!json.is_object()) {
    return InvalidArgument(std::string("expected an object with dtype, shape and data_offsets, ") +
                           "got a " + json.type_name());
  }
  for (const auto& item : json.items()) {
    const std::string& key = item.key();
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return InvalidArgument("unknown key " + Quoted(key) +
                             " (allowed: dtype, shape, data_offsets)");
    }
  }
  auto dtype = json.find("dtype");
  if (dtype == json.end() || !dtype->is_string()) {
    return InvalidArgument("dtype is missing or not a string");
  }
  if (*dtype != "F32") {
    return InvalidArgument("dtype " + dtype->get<std::string>() +
                           " is not supported: Trident checkpoints hold F32 only; hint: " +
                           "convert the tensors to float32");
  }
  return Status::Ok();
}

// Reads a JSON array of non-negative integers; false when `json` is anything else.
bool ReadUnsignedArray(const Json& json, std::vector<uint64_t>* values) {
  if (!json.is_array()) return false;
  for (const Json& value : json) {
    if (!value.is_number_unsigned()) return false;
    values->push_back(value.get<uint64_t>());
  }
  return true;
}

Status ParseShapeAndOffsets(const Json& json, SafetensorsEntry* entry) {
  std::vector<uint64_t> dims;
  auto shape = json.find("shape");
  if (shape == json.end() || !ReadUnsignedArray(*shape, &dims)) {
    return InvalidArgument("shape must be a list of non-negative integers");
  }
  for (uint64_t dim : dims) {
    if (dim > uint64_t{INT64_MAX}) return InvalidArgument("shape has a dim beyond 2^63");
    entry->shape.push_back(static_cast<int64_t>(dim));
  }
  std::vector<uint64_t> offsets;
  auto found = json.find("data_offsets");
  if (found == json.end() || !ReadUnsignedArray(*found, &offsets) || offsets.size() != 2 ||
      offsets[0] > offsets[1]) {
    return InvalidArgument("data_offsets must be [begin, end] with 0 <= begin <= end");
  }
  entry->begin = offsets[0];
  entry->end = offsets[1];
  return Status::Ok();
}

StatusOr<SafetensorsEntry> ParseEntry(const Json& json, uint64_t data_bytes) {
  TRIDENT_RETURN_IF_ERROR(CheckEntryKeysAndDtype(json));
  SafetensorsEntry entry;
  TRIDENT_RETURN_IF_ERROR(ParseShapeAndOffsets(json, &entry));
  const std::string span =
      "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + ")";
  if (entry.end > data_bytes) {
    return InvalidArgument(span + " run past the data buffer of " + std::to_string(data_bytes) +
                           " bytes; the file is truncated or corrupt");
  }
  std::optional<int64_t> count = CountElements(entry.shape);
  if (!count || static_cast<uint64_t>(*count) > UINT64_MAX / kF32Bytes ||
      static_cast<uint64_t>(*count) * kF32Bytes != entry.end - entry.begin) {
    return InvalidArgument("shape " + ShapeToString(entry.shape) + " holds " +
                           (count ? std::to_string(*count) : std::string("too many")) +
                           " F32 values but " + span + " span " +
                           std::to_string(entry.end - entry.begin) + " bytes");
  }
  return entry;
}

// The format requires the tensors to cover the data buffer exactly once.
Status CheckCoverage(const SafetensorsIndex& index, uint64_t data_bytes) {
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, entry] : index.tensors) order.emplace_back(&name, &entry);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  uint64_t covered = 0;
  const std::string* last = nullptr;
  for (const auto& [name, entry] : order) {
    if (entry->begin < covered) {
      return InvalidArgument("tensors " + Quoted(*last) + " and " + Quoted(*name) +
                             " overlap at data offset " + std::to_string(entry->begin));
    }
    if (entry->begin > covered) {
      return InvalidArgument("data bytes [" + std::to_string(covered) + ", " +
                             std::to_string(entry->begin) + ") belong to no tensor (a hole " +
                             "before " + Quoted(*name) + ")");
    }
    covered = entry->end;
    last = name;
  }
  if (covered != data_bytes) {
    return InvalidArgument("data bytes [" + std::to_string(covered) + ", " +
                           std::to_string(data_bytes) + ") at the end belong to no tensor");
  }
  return Status::Ok();
}

// The JSON object of the header that follows the length in `bytes`.
Status ParseHeader(std::string_view bytes, uint64_t length, Json* header) {
  TRIDENT_RETURN_IF_ERROR(ParseJson(bytes.substr(kLengthBytes, length), header));
  if (!header->is_object()) {
    return InvalidArgument(std::string("the JSON header is a ") + header->type_name() +
                           ", not an object");
  }
  return Status::Ok();
}

StatusOr<MetadataMap> MetadataOf(const Json& header) {
  auto it = header.find(kSafetensorsMetadataKey);
  return it == header.end() ? MetadataMap{} : ParseMetadata(*it);
}

// The header of the file at `path`: its first 8 bytes and the header they announce.
StatusOr<std::string> ReadHeaderBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(errno));
  }
  const auto file_bytes = static_cast<uint64_t>(in.tellg());
  std::string bytes(std::min<uint64_t>(file_bytes, kLengthBytes), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  StatusOr<uint64_t> length = HeaderLength(bytes, file_bytes);
  if (!length.ok()) return length.status().WithPrefix(path);
  bytes.resize(kLengthBytes + *length);
  in.read(bytes.data() + kLengthBytes, static_cast<std::streamsize>(*length));
  if (!in) return IoError(path + ": read failed");
  return bytes;
}

StatusOr<SafetensorsIndex> ParseIndex(std::string_view bytes) {
  TRIDENT_ASSIGN_OR_RETURN(uint64_t length, HeaderLength(bytes, bytes.size()));
  Json header;
  TRIDENT_RETURN_IF_ERROR(ParseHeader(bytes, length, &header));
  SafetensorsIndex index;
  index.data_start = kLengthBytes + length;
  const uint64_t data_bytes = bytes.size() - index.data_start;
  for (const auto& item : header.items()) {
    if (item.key() == kSafetensorsMetadataKey) {
      TRIDENT_ASSIGN_OR_RETURN(index.metadata, ParseMetadata(item.value()));
      continue;
    }
    StatusOr<SafetensorsEntry> entry = ParseEntry(item.value(), data_bytes);
    if (!entry.ok()) return entry.status().WithPrefix("tensor " + Quoted(item.key()));
    index.tensors.emplace(item.key(), std::move(entry).value());
  }
  TRIDENT_RETURN_IF_ERROR(CheckCoverage(index, data_bytes));
  return index;
}

}  // namespace

StatusOr<std::string> SerializeSafetensors(const TensorMap& tensors, const MetadataMap& metadata) {
  Json header;
  uint64_t data_bytes = 0;
  TRIDENT_RETURN_IF_ERROR(BuildHeader(tensors, metadata, &header, &data_bytes));
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("cannot write the safetensors header: ") + e.what() +
                           "; tensor names and metadata must be valid UTF-8");
  }
  text.append((kLengthBytes - (kLengthBytes + text.size()) % kLengthBytes) % kLengthBytes, ' ');
  std::string bytes = EncodeLength(text.size()) + text;
  bytes.reserve(bytes.size() + data_bytes);
  for (const auto& [name, tensor] : tensors) {
    if (tensor.values.empty()) continue;
    bytes.append(reinterpret_cast<const char*>(tensor.values.data()),
                 tensor.values.size() * kF32Bytes);
  }
  return bytes;
}

StatusOr<MetadataMap> ReadSafetensorsMetadata(const std::string& path) {
  TRIDENT_ASSIGN_OR_RETURN(std::string bytes, ReadHeaderBytes(path));
  Json header;
  Status parsed = ParseHeader(bytes, bytes.size() - kLengthBytes, &header);
  if (!parsed.ok()) return parsed.WithPrefix(path);
  StatusOr<MetadataMap> metadata = MetadataOf(header);
  if (!metadata.ok()) return metadata.status().WithPrefix(path);
  return metadata;
}

StatusOr<SafetensorsIndex> ParseSafetensorsIndex(std::string_view bytes, const std::string& file) {
  StatusOr<SafetensorsIndex> index = ParseIndex(bytes);
  if (!index.ok()) return index.status().WithPrefix(file);
  return index;
}

HostTensor ReadSafetensorsEntry(std::string_view bytes, const SafetensorsIndex& index,
                                const SafetensorsEntry& entry, const Slice& slice) {
  TRIDENT_CHECK(index.data_start + entry.end <= bytes.size()) << "entry outside the file";
  SliceRuns runs = RunsOf(entry.shape, slice);
  HostTensor tensor{SliceShape(entry.shape, slice),
                    std::vector<float>(static_cast<size_t>(runs.num_runs * runs.run_length))};
  if (tensor.values.empty()) return tensor;
  const char* data = bytes.data() + index.data_start + entry.begin;
  const size_t run_bytes = static_cast<size_t>(runs.run_length) * kF32Bytes;
  for (int64_t i = 0; i < runs.num_runs; ++i) {
    std::memcpy(tensor.values.data() + i * runs.run_length,
                data + (runs.first + i * runs.stride) * static_cast<int64_t>(kF32Bytes), run_bytes);
  }
  return tensor;
}

}  // namespace trident
