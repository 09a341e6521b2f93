// The optimizer of a training run: AdamW or SGD over one rank's parameters, a learning-rate
// schedule (linear warm-up, then cosine decay) and the clipping coefficient of a global
// gradient norm.
//
// With optimizer sharding (runtime/train/dp_shard.h) each parameter's state covers this rank's
// chunk, and Step updates that chunk of the value only, from the chunk of its gradient.
// Weight decay applies to matrices only (parameters of rank >= 2), not to biases and norm
// weights, as in Megatron-LM and nanoGPT.
// Mixed precision (values of another type than fp32, bf16): the optimizer keeps an fp32 master
// copy of each value's chunk, cast from the value when it is built; Step updates the master
// from the fp32 gradient and writes the value back rounded, as Megatron's bf16 optimizer.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/names.h"
#include "runtime/compute/compute.h"
#include "runtime/train/dp_shard.h"
#include "runtime/train/stage_model.h"

namespace trident {

enum class OptimizerKind { kAdamW, kSgd };
const NameTable<OptimizerKind>& OptimizerKindNames();  // "adamw", "sgd"

// Learning rate of step k (1 for the first step):
//   k <= warmup_steps:        lr · k / warmup_steps
//   otherwise, decay_steps 0: lr
//   otherwise:                min_lr + (lr − min_lr) · (1 + cos(π · t)) / 2,
//                             t = min(1, (k − warmup_steps) / max(1, decay_steps − warmup_steps))
// Worked example: lr 1e-3, min_lr 1e-4, warmup 10, decay 110: step 5 → 5e-4, step 10 → 1e-3,
// step 60 → 5.5e-4, step 110 and later → 1e-4.
struct LrSchedule {
  double lr = 1e-3;
  double min_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t decay_steps = 0;  // the step at which cosine decay reaches min_lr; 0: no decay

  double At(int64_t step) const;
};

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kAdamW;
  LrSchedule schedule;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;        // SGD only
  double clip_grad_norm = 0.0;  // 0: no clipping

  // InvalidArgument naming the option (as the worker's flag) for out-of-range values.
  Status Validate() const;
};

// The factor every gradient is scaled by before the step: min(1, max_norm / (norm + 1e-6)), as
// torch.nn.utils.clip_grad_norm_; 1 when max_norm is 0.
double ClipCoefficient(double global_norm, double max_norm);

class Optimizer {
 public:
  // Keeps `parameters` (not owned; must outlive the optimizer) and allocates the state of each
  // parameter's chunk of `shard` (the whole parameter without sharding), flat.
  Optimizer(Compute* compute, std::vector<ModelParameter>* parameters,
            const OptimizerOptions& options, const DpShard& shard = DpShard());

  // Scales every gradient by `grad_scale`, then updates every parameter at learning rate
  // options().schedule.At(step) (training step, 1 for the first); `update` (1 for the first)
  // counts the updates these parameters have taken, AdamW's bias-correction step. A flushing
  // schedule updates once a step (update == step); PipeDream once per micro-batch group.
  void Step(int64_t step, int64_t update, double grad_scale);
  // The same on `chunks` (GradSync::Chunks): with gradient or parameter sharding the chunks
  // live outside the parameters' tensors.
  void Step(int64_t step, int64_t update, double grad_scale, ParamChunks chunks);

  const OptimizerOptions& options() const { return options_; }
  // AdamW's moments, or SGD's momentum buffer as exp_avg (undefined exp_avg_sq), of parameter
  // i of the list, flat over its chunk; for checkpoints.
  Tensor& ExpAvg(size_t i) { return exp_avg_[i]; }
  Tensor& ExpAvgSq(size_t i) { return exp_avg_sq_[i]; }
  // The fp32 master weights of parameter i's chunk; undefined for an fp32 value (its own master).
  Tensor& Master(size_t i) { return master_[i]; }
  // Sets parameter i's master weights from its value (after the value was replaced whole, as a
  // split tie's copy is at start); nothing for an fp32 value.
  void ResetMaster(size_t i);
  const DpShard& shard() const { return shard_; }

 private:
  // Parameter p's master weights over `length` elements of its chunk (see Master).
  Tensor MasterOf(const Parameter& p, int64_t length);

  Compute* compute_;
  std::vector<ModelParameter>* parameters_;
  OptimizerOptions options_;
  DpShard shard_;
  std::vector<Tensor> exp_avg_;
  std::vector<Tensor> exp_avg_sq_;
  std::vector<Tensor> master_;
};

}  // namespace trident
