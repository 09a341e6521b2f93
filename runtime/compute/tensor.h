// Tensor: a dense, row-major array in a compute backend's memory (host memory for CpuCompute,
// device memory for a GPU backend).
//
// A tensor either owns its storage or is a view of part of another tensor's storage:
//  - Compute::Allocate returns an owning tensor. It is move-only and hands its storage back to
//    the backend that allocated it when destroyed (RAII); that backend must outlive it.
//  - View() returns a non-owning tensor over a contiguous range of the same storage, with any
//    shape of that many elements (a reshape, a slice of a flat parameter buffer, a micro-batch).
//    A view must not outlive the tensor it views. Like a pointer, a view does not carry const:
//    that is why View() is a non-const member.
// Shapes are named in code by a suffix of dimension letters (x_BSH: [batch, seq, hidden]);
// each file with tensor code has its legend at the top.
// Thread-safety: a Tensor is a plain handle; synchronizing access to its contents is the
// caller's job, as for any buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"

namespace trident {

class Compute;

// Element types of tensors: the training dtypes of core/dtype.h plus int32 for token ids and
// targets.
enum class ElementType { kFp32, kBf16, kFp16, kInt32 };

int ElementBytes(ElementType type);
const std::string& ElementTypeName(ElementType type);  // "fp32", "bf16", "fp16", "int32"
ElementType ElementTypeOf(DType dtype);

// The ElementType of a C++ element type that a tensor can be read as: float or int32_t.
template <typename T>
constexpr ElementType ElementTypeFor() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int32_t>,
                "tensors are read as float or int32_t");
  return std::is_same_v<T, float> ? ElementType::kFp32 : ElementType::kInt32;
}

class Tensor {
 public:
  // An undefined tensor: no storage, no shape, numel() == 0.
  Tensor() = default;
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor();

  bool defined() const { return compute_ != nullptr; }
  bool owns_storage() const { return owns_; }
  // The backend whose memory holds the elements (null for an undefined tensor).
  Compute* compute() const { return compute_; }

  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Dimension `axis`; a negative axis counts from the end (-1 is the last).
  // REQUIRES: -rank() <= axis < rank().
  int64_t dim(int axis) const;
  ElementType type() const { return type_; }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * ElementBytes(type_); }

  // Elements as T, in the backend's memory (not dereferenceable on the host for a GPU
  // backend). REQUIRES: type() == ElementTypeFor<T>().
  template <typename T>
  T* data() {
    CheckReadableAs(ElementTypeFor<T>());
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    CheckReadableAs(ElementTypeFor<T>());
    return static_cast<const T*>(data_);
  }
  // The elements as a span, in the backend's memory like data<T>() (what a Comm sends and
  // receives). REQUIRES: as data<T>().
  template <typename T>
  std::span<T> span() {
    return {data<T>(), static_cast<size_t>(numel_)};
  }
  template <typename T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }

  // A non-owning tensor of `shape` over elements [offset, offset + numel(shape)) of this one.
  // REQUIRES: defined(); 0 <= offset; dims >= 0; offset + numel(shape) <= numel().
  Tensor View(int64_t offset, std::vector<int64_t> shape);

  // "[4, 7, 13] fp32".
  std::string ToString() const;

 private:
  friend class Compute;  // the only creator of owning tensors

  Tensor(Compute* compute, void* data, std::vector<int64_t> shape, ElementType type, bool owns);
  void CheckReadableAs(ElementType type) const;
  void Release();

  Compute* compute_ = nullptr;
  void* data_ = nullptr;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  ElementType type_ = ElementType::kFp32;
  bool owns_ = false;
};

// The number of elements of a tensor of `shape` (1 for the empty shape of a scalar).
// REQUIRES: every dimension >= 0.
int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace trident
