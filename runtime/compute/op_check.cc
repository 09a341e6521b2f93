#include "runtime/compute/op_check.h"

#include "core/check.h"

namespace trident {
namespace {

// The address range [begin, end) of a tensor's elements.
struct ByteRange {
  const char* begin;
  const char* end;
};

ByteRange RangeOf(const Tensor& t) {
  const char* begin = static_cast<const char*>(t.raw_data());
  return {begin, begin + t.bytes()};
}

bool Overlap(const Tensor& a, const Tensor& b) {
  const ByteRange ra = RangeOf(a);
  const ByteRange rb = RangeOf(b);
  if (ra.begin == ra.end || rb.begin == rb.end) return false;
  return ra.begin < rb.end && rb.begin < ra.end;
}

// Elements from the first to one past the last element of one matrix (0 when empty).
int64_t MatrixSpan(const MatrixLayout& layout) {
  if (layout.rows == 0 || layout.cols == 0) return 0;
  return (layout.rows - 1) * layout.ld + layout.cols;
}

}  // namespace

int64_t MatrixCols(const Tensor& t) { return t.rank() == 0 ? 1 : t.dim(-1); }

int64_t MatrixRows(const Tensor& t) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < t.rank(); ++i) rows *= t.dim(i);
  return rows;
}

const OpCheck& OpCheck::Mine(const NamedTensor& arg) const {
  TRIDENT_CHECK(arg.tensor.defined()) << "Compute::" << op_ << ": " << arg.name << " is undefined";
  TRIDENT_CHECK(arg.tensor.compute() == compute_)
      << "Compute::" << op_ << ": " << arg.name << " " << arg.tensor.ToString()
      << " belongs to another backend";
  return *this;
}

const OpCheck& OpCheck::Floats(std::initializer_list<NamedTensor> args) const {
  const NamedTensor& first = *args.begin();
  for (const NamedTensor& arg : args) {
    Mine(arg);
    TRIDENT_CHECK(arg.tensor.type() != ElementType::kInt32 &&
                  arg.tensor.type() == first.tensor.type())
        << "Compute::" << op_ << ": " << arg.name << " " << arg.tensor.ToString()
        << " must be floating point, of the type of " << first.name << " "
        << first.tensor.ToString();
  }
  return *this;
}

const OpCheck& OpCheck::Accumulator(const NamedTensor& acc, const NamedTensor& like) const {
  Mine(acc);
  const ElementType type = acc.tensor.type();
  TRIDENT_CHECK(type == like.tensor.type() || type == ElementType::kFp32)
      << "Compute::" << op_ << ": " << acc.name << " " << acc.tensor.ToString()
      << " must be fp32 or of the type of " << like.name << " " << like.tensor.ToString();
  return *this;
}

const OpCheck& OpCheck::OfType(ElementType type, std::initializer_list<NamedTensor> args) const {
  for (const NamedTensor& arg : args) {
    Mine(arg);
    TRIDENT_CHECK(arg.tensor.type() == type)
        << "Compute::" << op_ << ": " << arg.name << " " << arg.tensor.ToString() << " must be "
        << ElementTypeName(type);
  }
  return *this;
}

const OpCheck& OpCheck::SameNumel(std::initializer_list<NamedTensor> args) const {
  const NamedTensor& first = *args.begin();
  for (const NamedTensor& arg : args) {
    TRIDENT_CHECK(arg.tensor.numel() == first.tensor.numel())
        << "Compute::" << op_ << ": " << arg.name << " " << arg.tensor.ToString() << " and "
        << first.name << " " << first.tensor.ToString() << " differ in element count";
  }
  return *this;
}

const OpCheck& OpCheck::Numel(const NamedTensor& arg, int64_t numel) const {
  TRIDENT_CHECK(arg.tensor.numel() == numel)
      << "Compute::" << op_ << ": " << arg.name << " " << arg.tensor.ToString() << " must have "
      << numel << " elements";
  return *this;
}

const OpCheck& OpCheck::LastDim(const NamedTensor& arg, int64_t cols) const {
  TRIDENT_CHECK(arg.tensor.rank() >= 1 && arg.tensor.dim(-1) == cols)
      << "Compute::" << op_ << ": " << arg.name << " " << arg.tensor.ToString()
      << " must have last dimension " << cols;
  return *this;
}

const OpCheck& OpCheck::Disjoint(const NamedTensor& out, const NamedTensor& in) const {
  TRIDENT_CHECK(!Overlap(out.tensor, in.tensor))
      << "Compute::" << op_ << ": " << out.name << " " << out.tensor.ToString() << " overlaps "
      << in.name << " " << in.tensor.ToString();
  return *this;
}

const OpCheck& OpCheck::SameOrDisjoint(const NamedTensor& out, const NamedTensor& in) const {
  const bool same =
      out.tensor.raw_data() == in.tensor.raw_data() && out.tensor.bytes() == in.tensor.bytes();
  return same ? *this : Disjoint(out, in);
}

const OpCheck& OpCheck::Inside(const NamedTensor& arg, const MatrixLayout& layout,
                               int64_t batch) const {
  const bool valid = layout.offset >= 0 && layout.rows >= 0 && layout.cols >= 0 &&
                     layout.ld >= layout.cols && layout.stride >= 0;
  const int64_t span = MatrixSpan(layout);
  const int64_t end = span == 0 ? 0 : layout.offset + (batch - 1) * layout.stride + span;
  TRIDENT_CHECK(valid && end <= arg.tensor.numel())
      << "Compute::" << op_ << ": " << batch << " matrices of " << layout.rows << "x" << layout.cols
      << " (offset " << layout.offset << ", ld " << layout.ld << ", stride " << layout.stride
      << ") do not fit in " << arg.name << " " << arg.tensor.ToString();
  return *this;
}

// Two ways a batch can avoid overlapping: matrices one after another (stride >= span), or
// side by side within the rows (stride >= cols and all of them fit within ld), as the
// heads of an attention activation are.
const OpCheck& OpCheck::NoOverlap(const NamedTensor& arg, const MatrixLayout& layout,
                                  int64_t batch) const {
  const int64_t span = MatrixSpan(layout);
  const bool sequential = layout.stride >= span;
  const bool side_by_side =
      layout.stride >= layout.cols && (batch - 1) * layout.stride + layout.cols <= layout.ld;
  TRIDENT_CHECK(batch == 1 || span == 0 || sequential || side_by_side)
      << "Compute::" << op_ << ": the " << batch << " output matrices of " << arg.name
      << " overlap (rows " << layout.rows << ", cols " << layout.cols << ", ld " << layout.ld
      << ", stride " << layout.stride << ")";
  return *this;
}

}  // namespace trident
