// WeightStash: PipeDream's weight stashing (Narayanan et al., SOSP 2019, §3.3) for the
// parameters of one rank. A stage updates its weights after every backward, while micro-batches
// whose forward ran on older weights are still in flight; each backward must use the weights its
// forward used, or its gradient is not the gradient of anything.
//
// Versions: the weights start at version 0 and each update makes the next. Forward(j) records
// the current version for micro-batch j; BeginBackward(j) puts j's version in place and
// EndBackward(j) puts the current weights back (both by swapping tensors, no copies).
// BeforeUpdate copies the current weights aside only when an in-flight micro-batch still needs
// them, and a copy is freed as soon as its last micro-batch ends backward. With 1F1B's order a
// position with w warm-up forwards holds at most w older versions (planner/memory_model.h's
// "one weight version per extra in-flight micro-batch").
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "runtime/compute/compute.h"
#include "runtime/train/stage_model.h"

namespace trident {

class WeightStash {
 public:
  // `parameters` (not owned) must outlive the stash; their value tensors are swapped in place.
  WeightStash(Compute* compute, std::vector<ModelParameter>* parameters);

  void Forward(int micro_batch);
  // REQUIRES: Forward(micro_batch) ran and its backward has not.
  void BeginBackward(int micro_batch);
  void EndBackward(int micro_batch);
  // Around an optimizer update of the parameters (between backwards, never inside one).
  void BeforeUpdate();
  void AfterUpdate() { ++version_; }

  int64_t version() const { return version_; }
  // Older versions held now.
  size_t StashedVersions() const { return stash_.size(); }
  int InFlight() const { return static_cast<int>(in_flight_.size()); }

 private:
  void Swap(std::vector<Tensor>& values);

  Compute* compute_;
  std::vector<ModelParameter>* parameters_;
  int64_t version_ = 0;
  std::map<int, int64_t> in_flight_;              // micro-batch -> version its forward used
  std::map<int64_t, std::vector<Tensor>> stash_;  // version -> copies of the values
  int swapped_in_ = -1;                           // micro-batch whose version is in place
};

}  // namespace trident
