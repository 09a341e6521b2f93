#include "runtime/train/grad_sync.h"

#include <algorithm>

#include "runtime/layers/layer_ops.h"

namespace trident {

GradSync::GradSync(Compute* compute, StageModel* model, Comm* grad_comm, Comm* tie_comm,
                   Comm* tp_comm, const DpShard& shard, int64_t bucket_bytes)
    : compute_(compute),
      model_(model),
      grad_comm_(grad_comm),
      tie_comm_(tie_comm),
      tp_comm_(tp_comm),
      shard_(shard) {
  if (!model->parameters().empty()) value_type_ = model->parameters().front().param.value->type();
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
    if (scatter && shard_.shard_grads) {
      Release(p.stage, p.layer, &p.param, true);
      continue;
    }
    AddToBucket(p.stage, scatter ? Sum::kScatter : Sum::kAllReduce, &p.param, bucket_bytes);
  }
  int64_t at = 0;
  for (ModelParameter& p : model->parameters()) {
    if (!released_.contains(p.param.grad)) continue;
    if (p.also_layer >= 0) Release(p.also_stage, p.also_layer, &p.param, false);
    released_[p.param.grad] = at;
    at += shard_.Of(p.param.numel()).chunk;
  }
  if (at > 0) sums_ = compute_->Allocate({at});
  if (at > 0 && shard_.shard_params) TakeValueChunks(at);
  for (Bucket& b : buckets_) {
    b.flat = compute_->Allocate({std::max(b.numel, shard_.n * b.chunks)});
    if (shard_.sharded()) b.mine = compute_->Allocate({b.chunks});
  }
  if (tp_partial_.numel > 0) tp_partial_.flat = compute_->Allocate({tp_partial_.numel});
}

// The own parameters of every layer come before any shared one.
void GradSync::Release(int stage, int layer, Parameter* param, bool own) {
  LayerGrads* grads = FindLayer(stage, layer);
  if (grads == nullptr) {
    grads = &layers_.emplace_back();
    grads->stage = stage;
    grads->layer = layer;
  }
  const int64_t chunk = shard_.Of(param->numel()).chunk;
  grads->params.push_back(param);
  grads->chunks += chunk;
  if (own) {
    ++grads->own;
    grads->own_chunks += chunk;
    released_[param->grad] = 0;
    *param->grad = Tensor();
  }
}

GradSync::LayerGrads* GradSync::FindLayer(int stage, int layer) {
  for (LayerGrads& l : layers_) {
    if (l.stage == stage && l.layer == layer) return &l;
  }
  return nullptr;
}

void GradSync::LayerGradsNeeded(int stage, int layer) {
  LayerGrads* grads = FindLayer(stage, layer);
  if (grads == nullptr) return;
  for (Parameter* p : grads->params) {
    if (!p->grad->defined()) *p->grad = compute_->Allocate(p->shape());
  }
}

Status GradSync::LayerWeightsDone(int stage, int layer, std::chrono::milliseconds timeout) {
  LayerGrads* grads = FindLayer(stage, layer);
  if (grads == nullptr) return Status::Ok();
  Tensor blocks = compute_->Allocate({shard_.n * grads->chunks});
  PackBlocks(grads->params, grads->chunks, blocks, true);
  compute_->Synchronize();
  Tensor mine = compute_->Allocate({grads->chunks});
  TRIDENT_ASSIGN_OR_RETURN(Request request, shard_.shard_comm->StartReduceScatterSum(
                                                blocks.span<float>(), mine.span<float>()));
  TRIDENT_RETURN_IF_ERROR(shard_.shard_comm->Wait(request, timeout));
  int64_t at = 0;
  for (Parameter* p : grads->params) {
    const int64_t chunk = shard_.Of(p->numel()).chunk;
    Tensor sum = sums_.View(released_.at(p->grad), {chunk});
    compute_->Axpy(1.0f, mine.View(at, {chunk}), sum);
    at += chunk;
  }
  return Status::Ok();
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

void GradSync::PackBlocks(const std::vector<Parameter*>& params, int64_t chunks, Tensor& blocks,
                          bool release) {
  int64_t at = 0;
  for (Parameter* p : params) {
    const int64_t numel = p->grad->numel();
    for (int k = 0; k < shard_.n; ++k) {
      const ShardSpan span = ShardOf(numel, shard_.n, k);
      if (span.length == 0) continue;
      Tensor block = blocks.View(k * chunks + at, {span.length});
      compute_->Copy(DpShard::Chunk(*p->grad, span), block);
    }
    at += shard_.Of(numel).chunk;
    if (release) *p->grad = Tensor();  // the allocator reuses it in stream order
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

Status GradSync::StartBucket(Bucket& bucket) {
  if (bucket.sum == Sum::kElsewhere) return Status::Ok();
  if (bucket.sum == Sum::kAllReduce) {
    Pack(bucket);
    compute_->Synchronize();
    Tensor whole = bucket.flat.View(0, {bucket.numel});
    TRIDENT_ASSIGN_OR_RETURN(bucket.request, grad_comm_->StartAllReduceSum(whole.span<float>()));
    return Status::Ok();
  }
  PackBlocks(bucket.params, bucket.chunks, bucket.flat, false);
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
  if (shard_.replicate_comm != nullptr && sums_.defined()) {
    compute_->Synchronize();
    TRIDENT_RETURN_IF_ERROR(shard_.replicate_comm->AllReduceSum(sums_.span<float>()));
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
    if (value_type_ == ElementType::kFp32) {  // the gradient buffers carry the values too
      TRIDENT_RETURN_IF_ERROR(GatherChunks(b.params, b.chunks, b.mine, b.flat));
      continue;
    }
    Tensor mine = compute_->Allocate({b.chunks}, value_type_);
    Tensor blocks = compute_->Allocate({shard_.n * b.chunks}, value_type_);
    TRIDENT_RETURN_IF_ERROR(GatherChunks(b.params, b.chunks, mine, blocks));
  }
  if (values_.defined()) return Status::Ok();  // the next forward gathers them
  for (const LayerGrads& layer : layers_) {
    if (layer.own == 0) continue;
    const std::vector<Parameter*> own(layer.params.begin(), layer.params.begin() + layer.own);
    Tensor mine = compute_->Allocate({layer.own_chunks}, value_type_);
    Tensor blocks = compute_->Allocate({shard_.n * layer.own_chunks}, value_type_);
    TRIDENT_RETURN_IF_ERROR(GatherChunks(own, layer.own_chunks, mine, blocks));
  }
  return Status::Ok();
}

Status GradSync::GatherChunks(const std::vector<Parameter*>& params, int64_t chunks, Tensor& mine,
                              Tensor& blocks) {
  int64_t at = 0;
  for (Parameter* p : params) {
    const ShardSpan span = shard_.Of(p->numel());
    if (span.length > 0) {
      Tensor slot = mine.View(at, {span.length});
      compute_->Copy(DpShard::Chunk(*p->value, span), slot);
    }
    at += span.chunk;
  }
  return GatherInto(params, chunks, mine, blocks);
}

Status GradSync::GatherInto(const std::vector<Parameter*>& params, int64_t chunks,
                            const Tensor& mine, Tensor& blocks) {
  compute_->Synchronize();
  Tensor all = blocks.View(0, {shard_.n * chunks});
  TRIDENT_RETURN_IF_ERROR(shard_.shard_comm->AllGather(WireOf(mine), WireOf(all)));
  for (int k = 0; k < shard_.n; ++k) {
    int64_t at = k * chunks;
    for (Parameter* p : params) {
      const ShardSpan span = ShardOf(p->numel(), shard_.n, k);
      if (span.length > 0) {
        Tensor chunk = DpShard::Chunk(*p->value, span);
        compute_->Copy(all.View(at, {span.length}), chunk);
      }
      at += span.chunk;
    }
  }
  return Status::Ok();
}

void GradSync::TakeValueChunks(int64_t numel) {
  values_ = compute_->Allocate({numel}, value_type_);
  for (ModelParameter& p : model_->parameters()) {
    auto it = released_.find(p.param.grad);
    if (it == released_.end()) continue;
    const ShardSpan span = shard_.Of(p.param.numel());
    if (span.length > 0) {
      Tensor slot = values_.View(it->second, {span.length});
      compute_->Copy(DpShard::Chunk(*p.param.value, span), slot);
    }
    *p.param.value = Tensor();  // the allocator reuses it in stream order
  }
}

Status GradSync::LayerParamsNeeded(int stage, int layer) {
  LayerGrads* group = FindLayer(stage, layer);
  if (group == nullptr || !values_.defined()) return Status::Ok();
  Tensor mine = compute_->Allocate({group->chunks}, value_type_);
  int64_t at = 0;
  for (Parameter* p : group->params) {
    const ShardSpan span = shard_.Of(p->numel());
    if (span.length > 0) {
      Tensor slot = mine.View(at, {span.length});
      compute_->Copy(values_.View(released_.at(p->grad), {span.length}), slot);
    }
    at += span.chunk;
    *p->value = compute_->Allocate(p->shape(), value_type_);
  }
  Tensor blocks = compute_->Allocate({shard_.n * group->chunks}, value_type_);
  return GatherInto(group->params, group->chunks, mine, blocks);
}

void GradSync::LayerParamsDone(int stage, int layer) {
  LayerGrads* group = FindLayer(stage, layer);
  if (group == nullptr || !values_.defined()) return;
  for (Parameter* p : group->params) *p->value = Tensor();
}

ParamChunks GradSync::Chunks() {
  ParamChunks chunks;
  for (ModelParameter& p : model_->parameters()) {
    const ShardSpan span = shard_.Of(p.param.numel());
    const auto it = released_.find(p.param.grad);
    const bool released = it != released_.end();
    if (span.length == 0) {
      chunks.grads.emplace_back();
      chunks.values.emplace_back();
      continue;
    }
    chunks.grads.push_back(released ? sums_.View(it->second, {span.length})
                                    : DpShard::Chunk(*p.param.grad, span));
    chunks.values.push_back(released && values_.defined() ? values_.View(it->second, {span.length})
                                                          : DpShard::Chunk(*p.param.value, span));
  }
  return chunks;
}

void GradSync::ZeroGrads() {
  for (ModelParameter& p : model_->parameters()) {
    if (p.param.grad->defined()) compute_->Fill(0.0f, *p.param.grad);
  }
  if (sums_.defined()) compute_->Fill(0.0f, sums_);
}

}  // namespace trident
