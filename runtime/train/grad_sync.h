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
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/train/stage_model.h"

namespace trident {

class GradSync {
 public:
  // `grad_comm` (nullptr when the rank's grad group is itself alone), `tie_comm` (nullptr when the
  // rank holds neither side of a split tie) and `tp_comm` (nullptr for tp 1) must outlive the
  // object, as must `model`.
  GradSync(Compute* compute, StageModel* model, Comm* grad_comm, Comm* tie_comm, Comm* tp_comm,
           int64_t bucket_bytes);

  // Starts the all-reduce of every bucket of `stage`.
  Status StageDone(int stage);
  // Waits for the started buckets (up to `timeout` each), writes the sums back, then sums the
  // tied table over the tie group and the partial gradients over the tp group.
  Status Finish(std::chrono::milliseconds timeout);

 private:
  struct Bucket {
    int stage = 0;
    std::vector<Tensor*> grads;
    int64_t numel = 0;
    Tensor flat;
    Request request;
  };
  void Pack(Bucket& bucket);
  void Unpack(Bucket& bucket);

  Compute* compute_;
  Comm* grad_comm_;
  Comm* tie_comm_;
  Comm* tp_comm_;
  std::vector<Bucket> buckets_;
  std::vector<Tensor*> tied_;
  Bucket tp_partial_;  // the norms' partial gradients, summed over tp in one call
};

}  // namespace trident
