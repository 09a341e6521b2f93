// OpCheck: the argument checks of one Compute call, with the call's name and the tensors'
// names and shapes in every failure message ("Compute::Add: out [4, 8] fp32 ...").
// Internal to runtime/compute: Compute's public methods use it before calling a backend.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "runtime/compute/compute.h"

namespace trident {

// A tensor argument and the name the message gives it.
struct NamedTensor {
  const char* name;
  const Tensor& tensor;
};

class OpCheck {
 public:
  OpCheck(const Compute* compute, const char* op) : compute_(compute), op_(op) {}

  // Each is defined, belongs to the backend, and is floating point; all share one type.
  const OpCheck& Floats(std::initializer_list<NamedTensor> args) const;
  // `acc` is a float tensor of `like`'s type or fp32: a weight gradient or GEMM output that
  // mixed precision keeps in fp32 while the operands are bf16 (compute.h, "mixed").
  const OpCheck& Accumulator(const NamedTensor& acc, const NamedTensor& like) const;
  // Each is defined, belongs to the backend and has element type `type`.
  const OpCheck& OfType(ElementType type, std::initializer_list<NamedTensor> args) const;
  // All have the element count of the first.
  const OpCheck& SameNumel(std::initializer_list<NamedTensor> args) const;
  const OpCheck& Numel(const NamedTensor& arg, int64_t numel) const;
  // The last dimension is `cols` (a rank-0 tensor has none and fails).
  const OpCheck& LastDim(const NamedTensor& arg, int64_t cols) const;
  // `out` and `in` share no element.
  const OpCheck& Disjoint(const NamedTensor& out, const NamedTensor& in) const;
  // `out` and `in` are the same elements, or share none.
  const OpCheck& SameOrDisjoint(const NamedTensor& out, const NamedTensor& in) const;
  // The matrices of `layout` (batch of them) lie inside `arg`.
  const OpCheck& Inside(const NamedTensor& arg, const MatrixLayout& layout, int64_t batch) const;
  // The `batch` matrices of `layout` share no element.
  const OpCheck& NoOverlap(const NamedTensor& arg, const MatrixLayout& layout, int64_t batch) const;

 private:
  const OpCheck& Mine(const NamedTensor& arg) const;

  const Compute* compute_;
  const char* op_;
};

// Rows of a tensor seen as a matrix [N, C]: every dimension but the last (1 for rank 0).
int64_t MatrixRows(const Tensor& t);
// Columns: the last dimension (1 for rank 0).
int64_t MatrixCols(const Tensor& t);

}  // namespace trident
