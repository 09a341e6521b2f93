// PipelineLinks: the communicators a rank's pipeline transfers travel on, one per channel
// (job_layout.h's PipelineChannel: a sender, a receiver, a stage boundary and a direction).
//
// By tag (MPI, in-process threads), every channel is the world communicator: the interpreter's
// tags tell the transfers apart, in whatever order they arrive.
//
// By order (NCCL), each channel is a communicator of its own two ranks. NCCL matches a pair's
// transfers in posting order and runs each communicator's work on one stream, in launch order,
// so on one communicator for every transfer a launched receive holds back every send launched
// after it: two ranks that each launch a receive from the other (a receive posted an action
// ahead; interleaved 1F1B's ranks exchange with one peer in both directions) can each wait for
// a send queued behind its own receive. On a channel of its own a stream carries only one
// channel's transfers, in the order both ranks post them (JobLayout::CheckInOrderTransfers),
// so a waiting receive holds back only later transfers of the same channel, which wait for it
// anyway: the layout runs as under MPI's matching, which JobLayout::CheckNoDeadlock proves free
// of deadlock. Worked example: pp 2, v 2 (stages 0, 2 on rank 0 and 1, 3 on rank 1) has six
// channels: activations across boundaries 0 and 2 and gradients across 1 from rank 0 to rank 1,
// gradients across 0 and 2 and activations across 1 from rank 1 to rank 0.
//
// Making the channels is collective over the world: every rank splits one two-rank
// communicator per channel it is on, in increasing channel order, which both ranks of a channel
// share, so the least channel not yet made always has both its ranks waiting for it. Each new
// channel then carries one one-element transfer of the compute backend's memory: NCCL connects
// a pair on its first transfer, blocking the launching call until the peer launches too, and
// that wait is taken here, with both ranks present, instead of inside a step.
// Thread-safety: immutable after creation; the communicators are used by one thread at a time.
#pragma once

#include <chrono>
#include <map>
#include <memory>

#include "core/status.h"
#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/train/job_layout.h"

namespace trident {

class PipelineLinks {
 public:
  // The communicator of a channel, and the peer's rank in it.
  struct Link {
    Comm* comm = nullptr;
    int peer = 0;
  };

  // Every channel on `world` (which must outlive the links).
  static PipelineLinks ByTag(Comm* world);
  // A two-rank communicator per channel of `rank` in `layout`, split from `world` and connected
  // (see the file comment); a failure names the channel. `compute` makes the connecting
  // transfer's tensors; `timeout` bounds its wait.
  static StatusOr<PipelineLinks> PerChannel(const JobLayout& layout, int rank, Comm* world,
                                            Compute* compute, std::chrono::milliseconds timeout);

  // REQUIRES: `channel` is one of this rank's (checked) when the links are per channel.
  Link For(const PipelineChannel& channel) const;
  bool per_channel() const { return world_ == nullptr; }

 private:
  Comm* world_ = nullptr;  // by tag; null per channel
  int rank_ = 0;
  std::map<PipelineChannel, std::unique_ptr<Comm>> channels_;
};

}  // namespace trident
