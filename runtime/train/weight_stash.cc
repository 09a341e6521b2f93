#include "runtime/train/weight_stash.h"

#include <utility>

#include "core/check.h"

namespace trident {

WeightStash::WeightStash(Compute* compute, std::vector<ModelParameter>* parameters)
    : compute_(compute), parameters_(parameters) {}

void WeightStash::Forward(int micro_batch) {
  TRIDENT_CHECK(in_flight_.emplace(micro_batch, version_).second)
      << "micro-batch " << micro_batch << " ran forward twice";
}

void WeightStash::Swap(std::vector<Tensor>& values) {
  for (size_t i = 0; i < values.size(); ++i) std::swap(*(*parameters_)[i].param.value, values[i]);
}

void WeightStash::BeginBackward(int micro_batch) {
  auto it = in_flight_.find(micro_batch);
  TRIDENT_CHECK(it != in_flight_.end())
      << "backward of micro-batch " << micro_batch << " without its forward";
  TRIDENT_CHECK(swapped_in_ < 0) << "backward of micro-batch " << swapped_in_ << " still open";
  if (it->second == version_) return;
  Swap(stash_.at(it->second));
  swapped_in_ = micro_batch;
}

void WeightStash::EndBackward(int micro_batch) {
  auto it = in_flight_.find(micro_batch);
  TRIDENT_CHECK(it != in_flight_.end()) << "micro-batch " << micro_batch << " is not in flight";
  const int64_t version = it->second;
  in_flight_.erase(it);
  if (swapped_in_ == micro_batch) {
    Swap(stash_.at(version));
    swapped_in_ = -1;
  }
  for (const auto& [mb, v] : in_flight_) {
    if (v == version) return;
  }
  stash_.erase(version);
}

void WeightStash::BeforeUpdate() {
  TRIDENT_CHECK(swapped_in_ < 0) << "update inside the backward of micro-batch " << swapped_in_;
  bool needed = false;
  for (const auto& [mb, v] : in_flight_) needed = needed || v == version_;
  if (!needed || stash_.count(version_)) return;
  std::vector<Tensor> copy;
  for (ModelParameter& p : *parameters_) {
    copy.push_back(compute_->Allocate(p.param.value->shape(), p.param.value->type()));
    compute_->Copy(*p.param.value, copy.back());
  }
  stash_.emplace(version_, std::move(copy));
}

}  // namespace trident
