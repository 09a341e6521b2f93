// GradSync: sums each parameter's gradient over every rank that holds a copy of it, so that all
// copies take the same optimizer step.
//
// Replicas (data parallelism and per-stage replication) and context parallelism: the gradients
// of a stage are summed over the ranks of its grad group (RankMap::GradGroup: the dp replicas,
// each with every cp rank, which saw its own part of each sequence). They go in buckets of about
// `bucket_bytes`, each packed into one flat buffer; a stage's buckets start their all-reduce
// (Comm::StartAllReduceSum) as soon as the interpreter reports the stage's gradients complete,
// so they travel while the rank's later backward work runs, and Finish waits for them and
// unpacks the sums. The sum is right because each micro-batch's loss gradient already carries
// 1 / M (the mean over the global batch), whatever count of micro-batches each replica ran
// (round robin, core/replica_lanes.h).
//
// Sequence parallelism: a norm's weight gradient covers the rank's tokens only
// (Parameter::tp_partial_grad), so Finish also sums those over the tp group, packed into one
// flat buffer (one all-reduce per step, not one per norm).
//
// Tied embeddings split over two positions: the embedding's table and the head's copy are
// left out of the buckets and summed instead over the tie group — every replica of the
// embedding's position and of the head's (and their cp ranks), same tp rank — after the buckets.
//
// Optimizer sharding (runtime/train/dp_shard.h): a bucket's flat buffer holds n blocks, block k
// the k-th chunk of each of its gradients, and the bucket starts a reduce-scatter over the
// shard group instead of the all-reduce, so each rank receives the sums of its own chunks (then
// summed over the replicate group too, with hybrid groups) and Finish writes them into its
// chunk of each gradient; the rest of a gradient keeps this rank's own part, which nothing
// reads. Gradients summed whole — the norms' partial ones (all-reduced as without sharding,
// then over tp) and a split tie's tables — still have their chunks stepped alone. After the
// optimizer step, GatherParameters all-gathers every parameter's chunks over the shard group
// through the same buffers.
//
// Gradient sharding (DpShard::shard_grads, ZeRO-2): a parameter whose chunks are summed by
// reduce-scatter holds no gradient tensor between its layer's backwards. The interpreter tells
// GradSync before a layer's backward work (its gradients are allocated, zero, unless they are)
// and when its weight gradient is done: the layer's gradients are then packed in the block
// layout (each released as soon as it is packed), reduce-scattered over the shard group, and
// this rank's block is added into its accumulated chunks, which live through the step. So a
// rank holds the chunks of every gradient plus one layer's whole gradients and their packed
// buffer, at the price of one reduce-scatter per layer and micro-batch. An embedding table the
// LM head uses on this rank (ModelParameter::also_layer) is summed after either layer's weight
// gradient, each time with that layer's part. Finish then sums the chunks over the replicate
// group (hybrid groups), and GatherParameters gathers these layers' parameters one layer at a
// time through buffers it frees again. Gradients summed whole (see above) keep whole
// gradients, as under optimizer sharding.
//
// Parameter sharding (DpShard::shard_params, ZeRO-3 and FSDP): the parameters whose gradients
// are released are released too, once the weights are final (GradSync is made after any
// checkpoint load); the rank keeps its chunk of each, flat, beside its gradient chunks. Before
// a layer's forward and before its input gradient the interpreter asks for its parameters
// (and a table it shares with the embedding), which are all-gathered over the shard group into
// whole tensors; once that work is done they are released again (the weight gradient needs
// no parameter). The optimizer steps the chunks (Chunks), and nothing is gathered after the
// step: the next forward does it, layer by layer.
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/train/dp_shard.h"
#include "runtime/train/stage_model.h"

namespace trident {

class GradSync {
 public:
  // `grad_comm` (nullptr when the rank's grad group is itself alone), `tie_comm` (nullptr when the
  // rank holds neither side of a split tie), `tp_comm` (nullptr for tp 1) and the comms of
  // `shard` must outlive the object, as must `model`.
  GradSync(Compute* compute, StageModel* model, Comm* grad_comm, Comm* tie_comm, Comm* tp_comm,
           const DpShard& shard, int64_t bucket_bytes);

  // Starts the all-reduce of every bucket of `stage`.
  Status StageDone(int stage);
  // Waits for the started buckets (up to `timeout` each), writes the sums back, then sums the
  // tied table over the tie group and the partial gradients over the tp group.
  Status Finish(std::chrono::milliseconds timeout);
  // With sharding, after the optimizer step: every rank's stepped chunks to every rank of the
  // shard group. Ok at once without sharding.
  Status GatherParameters();

  // Gradient sharding: before `layer`'s input or weight gradient of a micro-batch, allocates
  // its released gradients (unless they are); after its weight gradient, sums them into this
  // rank's chunks (waiting up to `timeout`) and releases them. Nothing to do for a layer
  // without released gradients, or without gradient sharding.
  void LayerGradsNeeded(int stage, int layer);
  Status LayerWeightsDone(int stage, int layer, std::chrono::milliseconds timeout);
  // Parameter sharding: before `layer`'s forward or input gradient, all-gathers its released
  // parameters into whole tensors (one blocking all-gather); after it, LayerParamsDone
  // releases them. Nothing to do without parameter sharding.
  Status LayerParamsNeeded(int stage, int layer);
  void LayerParamsDone(int stage, int layer);
  // This rank's chunk of each parameter's summed gradient (after Finish) and of its value:
  // what the optimizer steps, the gradient norm reads and a checkpoint gathers.
  ParamChunks Chunks();
  // Zeroes every gradient this rank holds and the accumulated chunks, for the next step.
  void ZeroGrads();

 private:
  // How a bucket's gradients are summed: all-reduced whole, reduce-scattered by chunks, or
  // elsewhere (a split tie's tables, in a bucket only for the parameter gather).
  enum class Sum { kAllReduce, kScatter, kElsewhere };
  struct Bucket {
    int stage = 0;
    Sum sum = Sum::kAllReduce;
    std::vector<Parameter*> params;
    std::vector<Tensor*> grads;
    int64_t numel = 0;
    int64_t chunks = 0;  // Σ chunk over params: one block of the flat buffer
    Tensor flat;         // max(numel, n · chunks) with sharding
    Tensor mine;         // with sharding: this rank's block (chunks)
    Request request;
  };
  void AddToBucket(int stage, Sum sum, Parameter* param, int64_t bucket_bytes);
  void Pack(Bucket& bucket);
  void Unpack(Bucket& bucket);
  // Block layout: block k of the flat buffer holds chunk k of each parameter, in order.
  // Each parameter's gradient into `blocks` (n · chunks), releasing it after when `release`.
  void PackBlocks(const std::vector<Parameter*>& params, int64_t chunks, Tensor& blocks,
                  bool release);
  void UnpackChunks(Bucket& bucket);
  Status StartBucket(Bucket& bucket);
  // Gradient sharding: the released gradients one layer adds to; its own parameters come first.
  struct LayerGrads {
    int stage = 0;
    int layer = 0;
    std::vector<Parameter*> params;
    size_t own = 0;          // of params, the layer's own (the rest: a table it shares)
    int64_t chunks = 0;      // Σ chunk over params: one block
    int64_t own_chunks = 0;  // Σ chunk over its own
  };
  // Adds `param` to the group of (stage, layer), made if new.
  void Release(int stage, int layer, Parameter* param, bool own);
  LayerGrads* FindLayer(int stage, int layer);
  // All-gathers the parameters' chunks over the shard group: this rank's into `mine` (chunks
  // elements), everyone's into `blocks` (n · chunks, block layout), then into the parameters.
  Status GatherChunks(const std::vector<Parameter*>& params, int64_t chunks, Tensor& mine,
                      Tensor& blocks);
  // The second half of GatherChunks: `mine` already holds this rank's chunks.
  Status GatherInto(const std::vector<Parameter*>& params, int64_t chunks, const Tensor& mine,
                    Tensor& blocks);
  // Parameter sharding: copies this rank's chunk of every released gradient's parameter into
  // values_ and releases the parameter.
  void TakeValueChunks(int64_t numel);

  Compute* compute_;
  StageModel* model_;
  Comm* grad_comm_;
  Comm* tie_comm_;
  Comm* tp_comm_;
  DpShard shard_;
  std::vector<Bucket> buckets_;
  std::vector<Tensor*> tied_;
  Bucket tp_partial_;  // the norms' partial gradients, summed over tp in one call
  std::vector<LayerGrads> layers_;
  // This rank's chunks of every released gradient, accumulated over the step's micro-batches,
  // and each gradient's offset in it.
  Tensor sums_;
  std::map<const Tensor*, int64_t> released_;
  // Parameter sharding: this rank's chunks of those gradients' parameters, at the same offsets.
  Tensor values_;
  // The parameters' values' element type (the plan's dtype); gradients are fp32.
  ElementType value_type_ = ElementType::kFp32;
};

}  // namespace trident
