#include "runtime/train/grad_sync.h"

namespace trident {

GradSync::GradSync(Compute* compute, StageModel* model, Comm* grad_comm, Comm* tie_comm,
                   Comm* tp_comm, int64_t bucket_bytes)
    : compute_(compute), grad_comm_(grad_comm), tie_comm_(tie_comm), tp_comm_(tp_comm) {
  for (ModelParameter& p : model->parameters()) {
    if (p.param.tp_partial_grad && tp_comm_ != nullptr) {
      tp_partial_.grads.push_back(p.param.grad);
      tp_partial_.numel += p.param.grad->numel();
    }
    if (p.tied_copy || p.tied_source) {
      if (tie_comm_ != nullptr) tied_.push_back(p.param.grad);
      continue;
    }
    if (grad_comm_ == nullptr) continue;
    if (buckets_.empty() || buckets_.back().stage != p.stage ||
        (buckets_.back().numel + p.param.grad->numel()) * 4 > bucket_bytes) {
      buckets_.emplace_back();
      buckets_.back().stage = p.stage;
    }
    buckets_.back().grads.push_back(p.param.grad);
    buckets_.back().numel += p.param.grad->numel();
  }
  for (Bucket& b : buckets_) b.flat = compute_->Allocate({b.numel});
  if (tp_partial_.numel > 0) tp_partial_.flat = compute_->Allocate({tp_partial_.numel});
}

void GradSync::Pack(Bucket& bucket) {
  int64_t offset = 0;
  for (Tensor* g : bucket.grads) {
    Tensor view = bucket.flat.View(offset, g->shape());
    compute_->Copy(*g, view);
    offset += g->numel();
  }
}

void GradSync::Unpack(Bucket& bucket) {
  int64_t offset = 0;
  for (Tensor* g : bucket.grads) {
    compute_->Copy(bucket.flat.View(offset, g->shape()), *g);
    offset += g->numel();
  }
}

Status GradSync::StageDone(int stage) {
  for (Bucket& b : buckets_) {
    if (b.stage != stage) continue;
    Pack(b);
    compute_->Synchronize();
    TRIDENT_ASSIGN_OR_RETURN(b.request, grad_comm_->StartAllReduceSum(b.flat.span<float>()));
  }
  return Status::Ok();
}

Status GradSync::Finish(std::chrono::milliseconds timeout) {
  for (Bucket& b : buckets_) {
    TRIDENT_RETURN_IF_ERROR(grad_comm_->Wait(b.request, timeout));
    Unpack(b);
  }
  for (Tensor* g : tied_) {
    compute_->Synchronize();
    TRIDENT_RETURN_IF_ERROR(tie_comm_->AllReduceSum(g->span<float>()));
  }
  if (tp_partial_.numel > 0) {
    Pack(tp_partial_);
    compute_->Synchronize();
    TRIDENT_RETURN_IF_ERROR(tp_comm_->AllReduceSum(tp_partial_.flat.span<float>()));
    Unpack(tp_partial_);
  }
  return Status::Ok();
}

}  // namespace trident
