// Compute::Widened: the operands one public method hands its Do* kernel (compute.h, "widened"):
// each tensor itself, or, for a float type the backend stores but does not compute on, an fp32
// stand-in in workspace memory, cast from it on first use; one stand-in per storage, so an
// output that aliases an input stays aliased. When the op returns, every output's stand-in is
// cast back (rounded once) and the workspace freed. A mixed call (an fp32 accumulator beside
// bf16 operands) widens every operand that is not fp32, on every backend, so kernels only ever
// see one float type.
// Internal to compute.cc and compute_nn.cc.
#pragma once

#include <array>

#include "core/check.h"
#include "runtime/compute/compute.h"

namespace trident {

class Compute::Widened {
 public:
  explicit Widened(Compute* compute, bool mixed = false) : compute_(compute), mixed_(mixed) {}
  Widened(const Widened&) = delete;
  Widened& operator=(const Widened&) = delete;
  ~Widened() {
    for (int i = 0; i < count_; ++i) {
      Entry& e = entries_[i];
      if (e.output) compute_->DoCast(e.fp32, *e.original);
      compute_->DoFreeWorkspace(e.fp32.raw_data(), e.fp32.bytes());
    }
  }

  const Tensor& In(const Tensor& t) { return StandIn(const_cast<Tensor&>(t), /*output=*/false); }
  Tensor& Out(Tensor& t) { return StandIn(t, /*output=*/true); }

 private:
  struct Entry {
    Tensor* original = nullptr;
    Tensor fp32;
    bool output = false;
  };

  Tensor& StandIn(Tensor& t, bool output) {
    const ElementType type = t.type();
    const bool is_float = type != ElementType::kInt32;
    const bool native = compute_->ComputesOn(type) && (!mixed_ || type == ElementType::kFp32);
    if (!t.defined() || !is_float || native) return t;
    for (int i = 0; i < count_; ++i) {
      Entry& e = entries_[i];
      if (e.original->raw_data() == t.raw_data() && e.original->numel() == t.numel()) {
        e.output = e.output || output;
        return e.fp32;
      }
    }
    TRIDENT_CHECK(count_ < static_cast<int>(entries_.size())) << "too many widened operands";
    Entry& e = entries_[count_++];
    e.original = &t;
    e.output = output;
    const int64_t bytes = t.numel() * ElementBytes(ElementType::kFp32);
    e.fp32 = compute_->View(compute_->DoAllocateWorkspace(bytes), t.shape(), ElementType::kFp32);
    compute_->DoCast(t, e.fp32);
    return e.fp32;
  }

  Compute* compute_;
  bool mixed_;
  std::array<Entry, 8> entries_;  // the most float operands of one op
  int count_ = 0;
};

}  // namespace trident
