#include "runtime/compute/tensor.h"

#include <utility>

#include "core/check.h"
#include "core/names.h"
#include "runtime/compute/compute.h"

namespace trident {

int ElementBytes(ElementType type) {
  switch (type) {
    case ElementType::kFp32:
    case ElementType::kInt32:
      return 4;
    case ElementType::kBf16:
    case ElementType::kFp16:
      return 2;
  }
  return 4;
}

const std::string& ElementTypeName(ElementType type) {
  static const NameTable<ElementType> kNames = {{"fp32", ElementType::kFp32},
                                                {"bf16", ElementType::kBf16},
                                                {"fp16", ElementType::kFp16},
                                                {"int32", ElementType::kInt32}};
  return NameOf(kNames, type);
}

ElementType ElementTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
      return ElementType::kFp32;
    case DType::kBf16:
      return ElementType::kBf16;
    case DType::kFp16:
      return ElementType::kFp16;
  }
  return ElementType::kFp32;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    TRIDENT_CHECK(d >= 0) << "negative dimension " << d << " in a tensor shape";
    numel *= d;
  }
  return numel;
}

Tensor::Tensor(Compute* compute, void* data, std::vector<int64_t> shape, ElementType type,
               bool owns)
    : compute_(compute),
      data_(data),
      shape_(std::move(shape)),
      numel_(NumElements(shape_)),
      type_(type),
      owns_(owns) {}

Tensor::Tensor(Tensor&& other) noexcept
    : compute_(std::exchange(other.compute_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      shape_(std::exchange(other.shape_, {})),
      numel_(std::exchange(other.numel_, 0)),
      type_(other.type_),
      owns_(std::exchange(other.owns_, false)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Release();
    compute_ = std::exchange(other.compute_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    shape_ = std::exchange(other.shape_, {});
    numel_ = std::exchange(other.numel_, 0);
    type_ = other.type_;
    owns_ = std::exchange(other.owns_, false);
  }
  return *this;
}

Tensor::~Tensor() { Release(); }

void Tensor::Release() {
  if (owns_) compute_->Free(data_, bytes());
  compute_ = nullptr;
  data_ = nullptr;
  shape_.clear();
  numel_ = 0;
  owns_ = false;
}

int64_t Tensor::dim(int axis) const {
  TRIDENT_CHECK(axis >= -rank() && axis < rank())
      << "axis " << axis << " of a tensor " << ToString();
  return shape_[static_cast<size_t>(axis < 0 ? axis + rank() : axis)];
}

Tensor Tensor::View(int64_t offset, std::vector<int64_t> shape) {
  TRIDENT_CHECK(defined()) << "View of an undefined tensor";
  const int64_t view_numel = NumElements(shape);
  TRIDENT_CHECK(offset >= 0 && offset + view_numel <= numel_)
      << "view of " << view_numel << " elements at offset " << offset << " of a tensor "
      << ToString();
  void* view_data =
      data_ == nullptr ? nullptr : static_cast<char*>(data_) + offset * ElementBytes(type_);
  return Tensor(compute_, view_data, std::move(shape), type_, /*owns=*/false);
}

std::string Tensor::ToString() const {
  if (!defined()) return "undefined";
  std::string text = "[";
  for (size_t i = 0; i < shape_.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape_[i]);
  }
  return text + "] " + ElementTypeName(type_);
}

void Tensor::CheckReadableAs(ElementType type) const {
  TRIDENT_CHECK(type == type_) << "a tensor " << ToString() << " read as " << ElementTypeName(type);
}

}  // namespace trident
