#include "runtime/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "core/check.h"

namespace trident {

const NameTable<OptimizerKind>& OptimizerKindNames() {
  static const NameTable<OptimizerKind> names = {{"adamw", OptimizerKind::kAdamW},
                                                 {"sgd", OptimizerKind::kSgd}};
  return names;
}

double LrSchedule::At(int64_t step) const {
  if (warmup_steps > 0 && step <= warmup_steps) {
    return lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  }
  if (decay_steps == 0) return lr;
  double span = static_cast<double>(std::max<int64_t>(1, decay_steps - warmup_steps));
  double t = std::min(1.0, static_cast<double>(step - warmup_steps) / span);
  return min_lr + (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * t)) / 2.0;
}

Status OptimizerOptions::Validate() const {
  auto bad = [](const std::string& flag, double value, const std::string& want) {
    return InvalidArgument(flag + " must be " + want + ", got " + std::to_string(value));
  };
  if (!(schedule.lr > 0) || !std::isfinite(schedule.lr)) return bad("--lr", schedule.lr, "> 0");
  if (!(schedule.min_lr >= 0) || schedule.min_lr > schedule.lr) {
    return bad("--min-lr", schedule.min_lr, "in [0, --lr]");
  }
  if (schedule.warmup_steps < 0) return bad("--warmup-steps", schedule.warmup_steps, ">= 0");
  if (schedule.decay_steps < 0) return bad("--decay-steps", schedule.decay_steps, ">= 0");
  if (!(beta1 >= 0 && beta1 < 1)) return bad("--beta1", beta1, "in [0, 1)");
  if (!(beta2 >= 0 && beta2 < 1)) return bad("--beta2", beta2, "in [0, 1)");
  if (!(eps > 0)) return bad("--eps", eps, "> 0");
  if (!(weight_decay >= 0)) return bad("--weight-decay", weight_decay, ">= 0");
  if (!(momentum >= 0 && momentum < 1)) return bad("--momentum", momentum, "in [0, 1)");
  if (!(clip_grad_norm >= 0)) return bad("--clip-grad", clip_grad_norm, ">= 0 (0: off)");
  return Status::Ok();
}

double ClipCoefficient(double global_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (global_norm + 1e-6));
}

Optimizer::Optimizer(Compute* compute, std::vector<ModelParameter>* parameters,
                     const OptimizerOptions& options, const DpShard& shard)
    : compute_(compute), parameters_(parameters), options_(options), shard_(shard) {
  for (ModelParameter& p : *parameters_) {
    const bool adam = options_.kind == OptimizerKind::kAdamW;
    const bool needs_buf = adam || options_.momentum > 0;
    const int64_t length = shard_.Of(p.param.numel()).length;
    exp_avg_.push_back(needs_buf ? compute_->Allocate({length}) : Tensor());
    exp_avg_sq_.push_back(adam ? compute_->Allocate({length}) : Tensor());
    master_.push_back(MasterOf(p.param, length));
  }
}

Tensor Optimizer::MasterOf(const Parameter& p, int64_t length) {
  // Values are whole when the optimizer is built; parameter sharding releases them later.
  TRIDENT_CHECK(p.value->defined()) << p.name << ": no value to take master weights from";
  if (p.value->type() == ElementType::kFp32 || length == 0) return Tensor();
  Tensor master = compute_->Allocate({length});
  Tensor value = DpShard::Chunk(*p.value, shard_.Of(p.numel()));
  compute_->Cast(value, master);
  return master;
}

void Optimizer::ResetMaster(size_t i) {
  if (!master_[i].defined()) return;
  const Parameter& p = (*parameters_)[i].param;
  compute_->Cast(DpShard::Chunk(*p.value, shard_.Of(p.numel())), master_[i]);
}

void Optimizer::Step(int64_t step, int64_t update, double grad_scale) {
  ParamChunks chunks;
  for (ModelParameter& p : *parameters_) {
    const ShardSpan span = shard_.Of(p.param.numel());
    const bool empty = span.length == 0;
    chunks.grads.push_back(empty ? Tensor() : DpShard::Chunk(*p.param.grad, span));
    chunks.values.push_back(empty ? Tensor() : DpShard::Chunk(*p.param.value, span));
  }
  Step(step, update, grad_scale, std::move(chunks));
}

void Optimizer::Step(int64_t step, int64_t update, double grad_scale, ParamChunks chunks) {
  const float lr = static_cast<float>(options_.schedule.At(step));
  for (size_t i = 0; i < parameters_->size(); ++i) {
    const Parameter& p = (*parameters_)[i].param;
    Tensor& grad = chunks.grads[i];
    Tensor& chunk = chunks.values[i];
    if (!chunk.defined()) continue;  // an empty chunk
    Tensor& value = master_[i].defined() ? master_[i] : chunk;
    if (grad_scale != 1.0) compute_->Scale(static_cast<float>(grad_scale), grad);
    const float decay = p.full_shape.size() >= 2 ? static_cast<float>(options_.weight_decay) : 0.0f;
    if (options_.kind == OptimizerKind::kAdamW) {
      AdamWConfig c{lr, static_cast<float>(options_.beta1), static_cast<float>(options_.beta2),
                    static_cast<float>(options_.eps), decay};
      compute_->AdamW(c, update, grad, value, exp_avg_[i], exp_avg_sq_[i]);
    } else {
      SgdConfig c{lr, static_cast<float>(options_.momentum), decay};
      compute_->Sgd(c, grad, value, exp_avg_[i]);
    }
    if (master_[i].defined()) compute_->Cast(value, chunk);
  }
}

}  // namespace trident
