// StageModel: the layers one rank runs — its stages (v of them under interleaving), each a
// contiguous range of the model's layers built for this rank's tp shard — and their
// parameters as the optimizer, the gradient synchronization and checkpoints see them.
//
// Tied embeddings (ModelSpec::tied_embeddings): when the embedding (stage 0) and the LM head
// (last stage) sit on the same pipeline position, the head uses the embedding's token table
// directly. Otherwise the head's rank holds a copy, ModelParameter::tied_copy, which the
// trainer keeps equal to the table: the copy is overwritten from the embedding's ranks after
// initialization and after a checkpoint load, both gradients are summed over the tie group
// before the optimizer step, and both sides then take the same update.
//
// Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/layers/layer.h"
#include "runtime/train/job_layout.h"

namespace trident {

// One parameter tensor of this rank.
struct ModelParameter {
  int stage = 0;
  int layer = 0;  // index in ModelSpec::ExpandLayers(); with `param.name`, the checkpoint key
  Parameter param;
  // Held whole by every tp rank (norms, row-parallel biases): counted once per tp group.
  bool tp_replicated = false;
  // The LM head's copy of the embedding table on another position (see the file comment).
  bool tied_copy = false;
  // The embedding's token table when a copy of it lives on another position.
  bool tied_source = false;
  // Another layer that adds to this gradient, or -1: the LM head (its stage and layer) when it
  // uses the embedding's token table on this rank.
  int also_stage = -1;
  int also_layer = -1;
};

struct StageLayers {
  int stage = 0;
  int first_layer = 0;
  std::vector<std::unique_ptr<Layer>> layers;  // layers first_layer, first_layer + 1, ...
};

class StageModel {
 public:
  // Builds rank `rank`'s stages. `tp_comm` and `cp_comm` are its tp and cp groups (nullptr
  // when the degree is 1); `compute` and the comms must outlive the model. REQUIRES: layout
  // built from a valid plan; the model has dropout 0 and passes TensorParallelProblem for the
  // plan's tp.
  StageModel(const JobLayout& layout, int rank, Compute* compute, Comm* tp_comm, Comm* cp_comm,
             uint64_t seed);

  std::vector<StageLayers>& stages() { return stages_; }
  // The stage with global index `stage`. REQUIRES: this rank runs it.
  StageLayers& Stage(int stage);
  std::vector<ModelParameter>& parameters() { return parameters_; }

 private:
  void BuildStage(const JobLayout& layout, int stage, const LayerContext& base);
  // `head_stage`: the LM head's stage when it uses the embedding's table on this rank, else -1.
  void CollectParameters(int tp_size, int head_stage, int head_layer);

  std::vector<StageLayers> stages_;
  std::vector<ModelParameter> parameters_;
  Tensor tied_value_;  // the head's copy of the table, when it lives on another position
  Tensor tied_grad_;
  Shape tied_full_shape_;
  Slice tied_slice_;
  bool tie_split_ = false;
};

}  // namespace trident
