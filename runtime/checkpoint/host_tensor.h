// HostTensor and Slice: fp32 tensors in host memory, and the part of one that a
// tensor-parallel rank holds.
//
// Tensors are row-major. Weights of linear layers are stored [out, in] (PyTorch nn.Linear),
// embeddings [vocab, hidden]. Under tensor parallelism (Megatron-LM, DESIGN.md §6):
//   column-parallel linear (QKV, fc1, gate/up): weight split by ROWS (output features), bias
//     split by rows (its only dim);
//   row-parallel linear (attention out, fc2, down): weight split by COLUMNS (input
//     features), bias held whole;
//   vocab-parallel embedding / LM head [vocab, hidden]: split by rows;
//   norms and other vectors: held whole.
// Rows are dim 0 of a tensor of any rank >= 1; columns are the last dim of a tensor of rank
// >= 2. Rank r of tp holds the chunk [r·c, min((r + 1)·c, d)) of a dim of size d, with
// c = ceil(d / tp): the even split when tp divides d, and Megatron's padded vocabulary split
// otherwise (the last ranks hold fewer, possibly zero, rows). Example: d = 10, tp = 4 gives
// [0, 3), [3, 6), [6, 9), [9, 10).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace trident {

using Shape = std::vector<int64_t>;

// "[256, 64]"; "[]" for a scalar.
std::string ShapeToString(const Shape& shape);
// The product of the dims (1 for a scalar); nullopt when a dim is negative or it overflows.
std::optional<int64_t> CountElements(const Shape& shape);

struct HostTensor {
  Shape shape;
  std::vector<float> values;  // row-major; values.size() == CountElements(shape)

  // Same shape and the same bits in every value (NaNs compare by bits, -0 != +0).
  bool BitwiseEquals(const HostTensor& other) const;
  bool operator==(const HostTensor&) const = default;  // by value: NaN != NaN
};

enum class SliceAxis { kFull, kRows, kColumns };

// A contiguous range [begin, end) of rows or columns, or the whole tensor.
struct Slice {
  SliceAxis axis = SliceAxis::kFull;
  int64_t begin = 0;
  int64_t end = 0;

  static Slice Full() { return {}; }
  static Slice Rows(int64_t begin, int64_t end) { return {SliceAxis::kRows, begin, end}; }
  static Slice Columns(int64_t begin, int64_t end) { return {SliceAxis::kColumns, begin, end}; }

  std::string ToString() const;  // "rows [0, 128)", "columns [64, 128)", "full"
  bool operator==(const Slice&) const = default;
};

// The slice of `full_shape` that tensor-parallel rank `tp_rank` of `tp` holds along `axis`
// (kFull gives the whole tensor). REQUIRES: 1 <= tp, 0 <= tp_rank < tp, and `axis` exists in
// `full_shape` (rank >= 1 for rows, >= 2 for columns).
Slice ShardSlice(const Shape& full_shape, SliceAxis axis, int tp, int tp_rank);

// InvalidArgument unless `slice` lies inside a tensor of `full_shape`.
Status CheckSlice(const Shape& full_shape, const Slice& slice);
// The shape of `slice` of `full_shape`. REQUIRES: CheckSlice ok.
Shape SliceShape(const Shape& full_shape, const Slice& slice);

// Where a slice's elements lie in the full row-major tensor: num_runs runs of run_length
// contiguous elements, run i starting at element first + i·stride. The slice's own
// elements are these runs in order.
struct SliceRuns {
  int64_t num_runs = 0;
  int64_t run_length = 0;
  int64_t first = 0;
  int64_t stride = 0;
};
// REQUIRES: CheckSlice ok.
SliceRuns RunsOf(const Shape& full_shape, const Slice& slice);

// The values of `slice` of `full`. REQUIRES: CheckSlice(full.shape, slice) ok.
HostTensor TakeSlice(const HostTensor& full, const Slice& slice);

// The inverse of sharding: concatenates `shards` along `axis` (rows or columns), in order.
// InvalidArgument when the shards disagree in the other dims or are malformed.
StatusOr<HostTensor> ConcatenateShards(const std::vector<HostTensor>& shards, SliceAxis axis);

}  // namespace trident
