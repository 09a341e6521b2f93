// Checkpoints: the full model and optimizer state at one step, in one safetensors file that
// does not depend on the plan that wrote it (DESIGN.md §4), so a job can resume under other
// tp / pp / dp degrees and stage cuts.
//
// Tensor names (safetensors keys), per layer index of the model spec and parameter name:
//   layers.{layer}.{param}                      the full, tp-gathered parameter
//   optimizer.layers.{layer}.{param}.exp_avg    Adam's first moment (same shape)
//   optimizer.layers.{layer}.{param}.exp_avg_sq Adam's second moment (same shape)
// e.g. "layers.1.attn.qkv.weight". Metadata (safetensors "__metadata__", all strings):
//   format_version  "1" — files with another version are refused
//   step            optimizer steps taken when the checkpoint was written
//   model           the model spec's name
// and any other keys, which are kept and written back unchanged.
//
// Writing: each rank gathers its tp shards into full tensors (ConcatenateShards) and the
// whole set is written with WriteFileAtomic (temporary file, fsync, rename), so a crash
// never leaves half a checkpoint. Reading: CheckpointReader validates the whole header on
// Open (see safetensors.h), then hands out whole tensors or the rows / columns a tp shard
// of any layout holds, each checked against the shape the caller's model expects.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/checkpoint/host_tensor.h"
#include "runtime/checkpoint/safetensors.h"

namespace trident {

std::string ParamKey(int layer, std::string_view param);     // layers.{layer}.{param}
std::string ExpAvgKey(int layer, std::string_view param);    // optimizer.layers...exp_avg
std::string ExpAvgSqKey(int layer, std::string_view param);  // optimizer.layers...exp_avg_sq

struct CheckpointMetadata {
  static constexpr int kFormatVersion = 1;

  int format_version = kFormatVersion;
  int64_t step = 0;
  std::string model;
  MetadataMap extra;  // other __metadata__ keys, kept as read

  bool operator==(const CheckpointMetadata&) const = default;
};

struct Checkpoint {
  CheckpointMetadata metadata;
  TensorMap tensors;  // by full name

  void SetParam(int layer, std::string_view param, HostTensor value);
  void SetOptimizerState(int layer, std::string_view param, HostTensor exp_avg,
                         HostTensor exp_avg_sq);
};

// The file bytes of `checkpoint`. InvalidArgument when a tensor's values disagree with its
// shape or an extra metadata key is one of the reserved ones.
StatusOr<std::string> SerializeCheckpoint(const Checkpoint& checkpoint);
// Serializes and writes atomically; errors are prefixed with `path`.
Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);

// A checkpoint file opened for reading. The file is read whole on Open.
// Thread-safety: immutable after Open; const methods may be called from any thread.
// The metadata of the checkpoint at `path`, from its header alone (safetensors.h), for checks
// before a job starts. Errors as CheckpointReader::Open's, for the header.
StatusOr<CheckpointMetadata> ReadCheckpointMetadata(const std::string& path);

class CheckpointReader {
 public:
  // NotFound / IoError for the file; InvalidArgument naming the file (and the tensor) when
  // it is not a valid safetensors file or not a Trident checkpoint of a known version.
  static StatusOr<CheckpointReader> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const CheckpointMetadata& metadata() const { return metadata_; }
  std::vector<std::string> TensorNames() const;  // sorted
  bool Contains(const std::string& name) const { return index_.tensors.count(name) > 0; }

  // `slice` of tensor `name`, whose full shape must be `expected_full_shape`. NotFound when
  // the tensor is missing (the message gives the expected shape); InvalidArgument when its
  // shape differs or the slice is outside it. Messages name the file and the tensor.
  StatusOr<HostTensor> ReadSlice(const std::string& name, const Shape& expected_full_shape,
                                 const Slice& slice) const;
  StatusOr<HostTensor> Read(const std::string& name, const Shape& expected_shape) const {
    return ReadSlice(name, expected_shape, Slice::Full());
  }
  StatusOr<HostTensor> ReadParam(int layer, std::string_view param, const Shape& full_shape,
                                 const Slice& slice = Slice::Full()) const {
    return ReadSlice(ParamKey(layer, param), full_shape, slice);
  }

  // Every tensor, whole, at its stored shape, with the metadata.
  Checkpoint ReadAll() const;

 private:
  CheckpointReader(std::string path, std::string bytes, SafetensorsIndex index,
                   CheckpointMetadata metadata);
  Status MissingTensor(const std::string& name, const Shape& expected_shape) const;

  std::string path_;
  std::string bytes_;
  SafetensorsIndex index_;
  CheckpointMetadata metadata_;
};

}  // namespace trident
