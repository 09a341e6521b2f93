#include "runtime/checkpoint/host_tensor.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace trident {
namespace {

// Product of shape[from, to); 1 when empty. REQUIRES: CountElements(shape) has a value.
int64_t Product(const Shape& shape, size_t from, size_t to) {
  int64_t product = 1;
  for (size_t i = from; i < to; ++i) product *= shape[i];
  return product;
}

// Where a shard joins the others: its extent along `axis`, and the shape left when that dim
// is set to 0 (which must agree between shards).
Status ShardKey(const HostTensor& shard, SliceAxis axis, size_t index, Shape* others) {
  const Shape& shape = shard.shape;
  size_t min_rank = axis == SliceAxis::kColumns ? 2 : 1;
  std::optional<int64_t> count = CountElements(shape);
  if (shape.size() < min_rank || !count || *count != static_cast<int64_t>(shard.values.size())) {
    return InvalidArgument("shard " + std::to_string(index) + " with shape " +
                           ShapeToString(shape) + " and " + std::to_string(shard.values.size()) +
                           " values cannot be joined along this axis");
  }
  *others = shape;
  (axis == SliceAxis::kColumns ? others->back() : others->front()) = 0;
  return Status::Ok();
}

// The size of the dim that `axis` slices. REQUIRES: axis != kFull, shape has that dim.
int64_t AxisDim(const Shape& shape, SliceAxis axis) {
  return axis == SliceAxis::kRows ? shape.front() : shape.back();
}

// The shape of the concatenation of `shards` along `axis`.
StatusOr<Shape> JoinedShape(const std::vector<HostTensor>& shards, SliceAxis axis) {
  Shape first_others;
  TRIDENT_RETURN_IF_ERROR(ShardKey(shards.front(), axis, 0, &first_others));
  int64_t extent = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    Shape others;
    TRIDENT_RETURN_IF_ERROR(ShardKey(shards[i], axis, i, &others));
    if (others != first_others) {
      return InvalidArgument("shard " + std::to_string(i) + " has shape " +
                             ShapeToString(shards[i].shape) + ", which does not match shard 0's " +
                             ShapeToString(shards.front().shape) + " outside the joined dim");
    }
    extent += AxisDim(shards[i].shape, axis);
  }
  Shape joined = shards.front().shape;
  (axis == SliceAxis::kRows ? joined.front() : joined.back()) = extent;
  return joined;
}

}  // namespace

std::string ShapeToString(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return text + "]";
}

std::optional<int64_t> CountElements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) return std::nullopt;
  }
  return count;
}

bool HostTensor::BitwiseEquals(const HostTensor& other) const {
  return shape == other.shape && values.size() == other.values.size() &&
         (values.empty() ||
          std::memcmp(values.data(), other.values.data(), values.size() * sizeof(float)) == 0);
}

std::string Slice::ToString() const {
  if (axis == SliceAxis::kFull) return "full";
  return std::string(axis == SliceAxis::kRows ? "rows" : "columns") + " [" + std::to_string(begin) +
         ", " + std::to_string(end) + ")";
}

Slice ShardSlice(const Shape& full_shape, SliceAxis axis, int tp, int tp_rank) {
  TRIDENT_CHECK(tp >= 1 && tp_rank >= 0 && tp_rank < tp) << "tp_rank " << tp_rank << " of " << tp;
  if (axis == SliceAxis::kFull) return Slice::Full();
  size_t min_rank = axis == SliceAxis::kColumns ? 2 : 1;
  TRIDENT_CHECK(full_shape.size() >= min_rank) << "cannot shard " << ShapeToString(full_shape);
  int64_t dim = AxisDim(full_shape, axis);
  int64_t chunk = (dim + tp - 1) / tp;
  int64_t begin = std::min(chunk * tp_rank, dim);
  return Slice{axis, begin, std::min(begin + chunk, dim)};
}

Status CheckSlice(const Shape& full_shape, const Slice& slice) {
  if (!CountElements(full_shape)) {
    return InvalidArgument("invalid shape " + ShapeToString(full_shape));
  }
  if (slice.axis == SliceAxis::kFull) return Status::Ok();
  size_t min_rank = slice.axis == SliceAxis::kColumns ? 2 : 1;
  if (full_shape.size() < min_rank) {
    return InvalidArgument(slice.ToString() + " needs a tensor of at least " +
                           std::to_string(min_rank) + " dims, got shape " +
                           ShapeToString(full_shape));
  }
  int64_t dim = AxisDim(full_shape, slice.axis);
  if (slice.begin < 0 || slice.begin > slice.end || slice.end > dim) {
    return InvalidArgument(slice.ToString() + " is outside shape " + ShapeToString(full_shape));
  }
  return Status::Ok();
}

Shape SliceShape(const Shape& full_shape, const Slice& slice) {
  Shape shape = full_shape;
  if (slice.axis == SliceAxis::kRows) shape.front() = slice.end - slice.begin;
  if (slice.axis == SliceAxis::kColumns) shape.back() = slice.end - slice.begin;
  return shape;
}

SliceRuns RunsOf(const Shape& full_shape, const Slice& slice) {
  TRIDENT_CHECK(CheckSlice(full_shape, slice).ok())
      << slice.ToString() << " of " << ShapeToString(full_shape);
  const size_t rank = full_shape.size();
  switch (slice.axis) {
    case SliceAxis::kFull:
      return {1, Product(full_shape, 0, rank), 0, 0};
    case SliceAxis::kRows: {
      int64_t row = Product(full_shape, 1, rank);
      return {1, (slice.end - slice.begin) * row, slice.begin * row, 0};
    }
    case SliceAxis::kColumns:
      return {Product(full_shape, 0, rank - 1), slice.end - slice.begin, slice.begin,
              full_shape.back()};
  }
  return {};
}

HostTensor TakeSlice(const HostTensor& full, const Slice& slice) {
  SliceRuns runs = RunsOf(full.shape, slice);
  HostTensor part{SliceShape(full.shape, slice), {}};
  part.values.reserve(static_cast<size_t>(runs.num_runs * runs.run_length));
  for (int64_t i = 0; i < runs.num_runs; ++i) {
    auto start = full.values.begin() + runs.first + i * runs.stride;
    part.values.insert(part.values.end(), start, start + runs.run_length);
  }
  return part;
}

StatusOr<HostTensor> ConcatenateShards(const std::vector<HostTensor>& shards, SliceAxis axis) {
  if (shards.empty() || axis == SliceAxis::kFull) {
    return InvalidArgument(
        "concatenating shards needs at least one shard and a rows or "
        "columns axis");
  }
  TRIDENT_ASSIGN_OR_RETURN(Shape joined, JoinedShape(shards, axis));
  HostTensor full{joined, std::vector<float>(static_cast<size_t>(*CountElements(joined)))};
  int64_t offset = 0;
  for (const HostTensor& shard : shards) {
    int64_t width = AxisDim(shard.shape, axis);
    SliceRuns runs = RunsOf(full.shape, Slice{axis, offset, offset + width});
    for (int64_t i = 0; i < runs.num_runs; ++i) {
      std::copy_n(shard.values.begin() + i * runs.run_length, runs.run_length,
                  full.values.begin() + runs.first + i * runs.stride);
    }
    offset += width;
  }
  return full;
}

}  // namespace trident
