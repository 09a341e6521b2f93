#include "runtime/train/grad_sync.h"

#include <algorithm>

namespace trident {

GradSync::GradSync(Compute* compute, StageModel* model, Comm* grad_comm, Comm* tie_comm,
                   Comm* tp_comm, const DpShard& shard, int64_t bucket_bytes)
    : compute_(compute),
      grad_comm_(grad_comm),
      tie_comm_(tie_comm),
      tp_comm_(tp_comm),
      shard_(shard) {
  for (ModelParameter& p : model->parameters()) {
    if (p.param.tp_partial_grad && tp_comm_ != nullptr) {
      tp_partial_.grads.push_back(p.param.grad);
      tp_partial_.numel += p.param.grad->numel();
    }
    if (p.tied_copy || p.tied_source) {
      if (tie_comm_ != nullptr) tied_.push_back(p.param.grad);
      if (shard_.sharded()) AddToBucket(p.stage, Sum::kElsewhere, &p.param, bucket_bytes);
      continue;
    }
    if (grad_comm_ == nullptr) continue;
    const bool scatter = shard_.sharded() && !p.param.tp_partial_grad;
    AddToBucket(p.stage, scatter ? Sum::kScatter : Sum::kAllReduce, &p.param, bucket_bytes);
  }
  for (Bucket& b : buckets_) {
    b.flat = compute_->Allocate({std::max(b.numel, shard_.n * b.chunks)});
    if (shard_.sharded()) b.mine = compute_->Allocate({b.chunks});
  }
  if (tp_partial_.numel > 0) tp_partial_.flat = compute_->Allocate({tp_partial_.numel});
}

void GradSync::AddToBucket(int stage, Sum sum, Parameter* param, int64_t bucket_bytes) {
  const int64_t numel = param->grad->numel();
  if (buckets_.empty() || buckets_.back().stage != stage || buckets_.back().sum != sum ||
      (buckets_.back().numel + numel) * 4 > bucket_bytes) {
    buckets_.emplace_back();
    buckets_.back().stage = stage;
    buckets_.back().sum = sum;
  }
  Bucket& b = buckets_.back();
  b.params.push_back(param);
  b.grads.push_back(param->grad);
  b.numel += numel;
  b.chunks += shard_.Of(numel).chunk;
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

void GradSync::PackBlocks(Bucket& bucket) {
  for (int k = 0; k < shard_.n; ++k) {
    int64_t at = k * bucket.chunks;
    for (Parameter* p : bucket.params) {
      const ShardSpan span = ShardOf(p->grad->numel(), shard_.n, k);
      if (span.length > 0) {
        Tensor block = bucket.flat.View(at, {span.length});
        compute_->Copy(DpShard::Chunk(*p->grad, span), block);
      }
      at += span.chunk;
    }
  }
}

void GradSync::UnpackChunks(Bucket& bucket) {
  int64_t at = 0;
  for (Parameter* p : bucket.params) {
    const ShardSpan span = shard_.Of(p->grad->numel());
    if (span.length > 0) {
      Tensor chunk = DpShard::Chunk(*p->grad, span);
      compute_->Copy(bucket.mine.View(at, {span.length}), chunk);
    }
    at += span.chunk;
  }
}

void GradSync::UnpackBlocks(Bucket& bucket) {
  for (int k = 0; k < shard_.n; ++k) {
    int64_t at = k * bucket.chunks;
    for (Parameter* p : bucket.params) {
      const ShardSpan span = ShardOf(p->value->numel(), shard_.n, k);
      if (span.length > 0) {
        Tensor chunk = DpShard::Chunk(*p->value, span);
        compute_->Copy(bucket.flat.View(at, {span.length}), chunk);
      }
      at += span.chunk;
    }
  }
}

Status GradSync::StartBucket(Bucket& bucket) {
  if (bucket.sum == Sum::kElsewhere) return Status::Ok();
  if (bucket.sum == Sum::kAllReduce) {
    Pack(bucket);
    compute_->Synchronize();
    Tensor whole = bucket.flat.View(0, {bucket.numel});
    TRIDENT_ASSIGN_OR_RETURN(bucket.request, grad_comm_->StartAllReduceSum(whole.span<float>()));
    return Status::Ok();
  }
  PackBlocks(bucket);
  compute_->Synchronize();
  Tensor blocks = bucket.flat.View(0, {shard_.n * bucket.chunks});
  TRIDENT_ASSIGN_OR_RETURN(bucket.request, shard_.shard_comm->StartReduceScatterSum(
                                               blocks.span<float>(), bucket.mine.span<float>()));
  return Status::Ok();
}

Status GradSync::StageDone(int stage) {
  for (Bucket& b : buckets_) {
    if (b.stage == stage) TRIDENT_RETURN_IF_ERROR(StartBucket(b));
  }
  return Status::Ok();
}

Status GradSync::Finish(std::chrono::milliseconds timeout) {
  for (Bucket& b : buckets_) {
    if (b.sum == Sum::kElsewhere) continue;
    Comm* comm = b.sum == Sum::kScatter ? shard_.shard_comm : grad_comm_;
    TRIDENT_RETURN_IF_ERROR(comm->Wait(b.request, timeout));
    if (b.sum == Sum::kAllReduce) {
      Unpack(b);
      continue;
    }
    if (shard_.replicate_comm != nullptr) {
      TRIDENT_RETURN_IF_ERROR(shard_.replicate_comm->AllReduceSum(b.mine.span<float>()));
    }
    UnpackChunks(b);
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

Status GradSync::GatherParameters() {
  if (!shard_.sharded()) return Status::Ok();
  for (Bucket& b : buckets_) {
    int64_t at = 0;
    for (Parameter* p : b.params) {
      const ShardSpan span = shard_.Of(p->value->numel());
      if (span.length > 0) {
        Tensor slot = b.mine.View(at, {span.length});
        compute_->Copy(DpShard::Chunk(*p->value, span), slot);
      }
      at += span.chunk;
    }
    compute_->Synchronize();
    Tensor blocks = b.flat.View(0, {shard_.n * b.chunks});
    TRIDENT_RETURN_IF_ERROR(
        shard_.shard_comm->AllGather(b.mine.span<float>(), blocks.span<float>()));
    UnpackBlocks(b);
  }
  return Status::Ok();
}

}  // namespace trident
