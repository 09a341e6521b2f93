// The safetensors file format (github.com/huggingface/safetensors), as Trident writes and
// reads it: fp32 tensors only.
//
//   bytes [0, 8)        N: the header length, unsigned 64-bit little-endian
//   bytes [8, 8 + N)    a UTF-8 JSON object, optionally padded with trailing spaces:
//                         name -> {"dtype": "F32", "shape": [d0, ...], "data_offsets": [b, e]}
//                         "__metadata__" -> {string: string}          (optional)
//   bytes [8 + N, end)  the data buffer: tensor `name` is bytes [b, e) of it, row-major,
//                       little-endian; the tensors cover the buffer exactly (no overlap, no
//                       hole), as the format requires.
//
// The writer lays tensors out in name order with no gaps and pads the header with spaces so
// the data starts at a multiple of 8 bytes (as the reference implementation does); the same
// input always gives the same bytes. The reader checks everything a damaged or foreign file
// can get wrong before any value is read, and says what and where: a file shorter than 8
// bytes, a header length past the end of the file (or above the format's 100 MiB limit),
// malformed JSON, a non-object header or entry, an unknown entry key, a dtype other than F32,
// a bad shape, offsets that are not [begin <= end], lie outside the buffer, disagree with the
// shape's element count, overlap another tensor or leave bytes of the buffer unused, and
// metadata that is not string to string.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"
#include "runtime/checkpoint/host_tensor.h"

namespace trident {

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;
inline constexpr char kSafetensorsMetadataKey[] = "__metadata__";

using TensorMap = std::map<std::string, HostTensor>;
using MetadataMap = std::map<std::string, std::string>;

struct SafetensorsEntry {
  Shape shape;
  uint64_t begin = 0;  // byte offsets [begin, end) in the data buffer
  uint64_t end = 0;
  bool operator==(const SafetensorsEntry&) const = default;
};

struct SafetensorsIndex {
  std::map<std::string, SafetensorsEntry> tensors;
  MetadataMap metadata;
  uint64_t data_start = 0;  // 8 + N: where the data buffer begins in the file
};

// The file bytes of `tensors` and `metadata`. InvalidArgument when a tensor's value count
// disagrees with its shape, a name is "__metadata__", or a name or metadata string is not
// valid UTF-8.
StatusOr<std::string> SerializeSafetensors(const TensorMap& tensors, const MetadataMap& metadata);

// Parses and validates the header of a whole file's `bytes`. Errors are InvalidArgument,
// prefixed with `file` and naming the tensor concerned.
StatusOr<SafetensorsIndex> ParseSafetensorsIndex(std::string_view bytes, const std::string& file);

// The `__metadata__` of the file at `path`, reading only its header (so a check before a job
// starts costs no more than the header, whatever the tensors weigh); the tensors are checked
// when the file is read whole. NotFound / IoError for the file; InvalidArgument, prefixed with
// `path`, for a header that is truncated, too long or not a JSON object with string metadata.
StatusOr<MetadataMap> ReadSafetensorsMetadata(const std::string& path);

// The values of `slice` of `entry`.
// REQUIRES: `index` = ParseSafetensorsIndex(bytes) holds `entry`; CheckSlice(entry.shape,
// slice) ok.
HostTensor ReadSafetensorsEntry(std::string_view bytes, const SafetensorsIndex& index,
                                const SafetensorsEntry& entry, const Slice& slice);

}  // namespace trident
