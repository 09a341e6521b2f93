#include "runtime/train/pipeline_links.h"

#include <string>
#include <utility>

#include "core/check.h"
#include "runtime/layers/layer_ops.h"

namespace trident {
namespace {

// The channel's first transfer, so NCCL connects the pair now (pipeline_links.h).
Status Connect(Comm& link, bool sending, Compute& compute, std::chrono::milliseconds timeout) {
  Tensor one = compute.Allocate({1});
  const int peer = sending ? 1 : 0;
  TRIDENT_ASSIGN_OR_RETURN(Request request, sending ? link.Isend(WireOf(one), peer, 0)
                                                    : link.Irecv(WireOf(one), peer, 0));
  return link.Wait(request, timeout);
}

}  // namespace

PipelineLinks PipelineLinks::ByTag(Comm* world) {
  PipelineLinks links;
  links.world_ = world;
  return links;
}

StatusOr<PipelineLinks> PipelineLinks::PerChannel(const JobLayout& layout, int rank, Comm* world,
                                                  Compute* compute,
                                                  std::chrono::milliseconds timeout) {
  PipelineLinks links;
  links.rank_ = rank;
  for (const PipelineChannel& channel : layout.ChannelsOf(rank)) {
    StatusOr<std::unique_ptr<Comm>> link = world->Split({channel.from, channel.to});
    Status status = link.status();
    if (status.ok()) status = Connect(**link, channel.from == rank, *compute, timeout);
    if (!status.ok()) {
      return Status(status.code(), "rank " + std::to_string(rank) + ": making the link of the " +
                                       channel.ToString() + ": " + status.message());
    }
    links.channels_.emplace(channel, std::move(*link));
  }
  return links;
}

PipelineLinks::Link PipelineLinks::For(const PipelineChannel& channel) const {
  if (world_ != nullptr) {
    return {world_, channel.from == world_->Rank() ? channel.to : channel.from};
  }
  auto it = channels_.find(channel);
  TRIDENT_CHECK(it != channels_.end())
      << "rank " << rank_ << " has no link for the " << channel.ToString();
  // Split({from, to}): the sender is rank 0 of the link, the receiver rank 1.
  return {it->second.get(), channel.from == rank_ ? 1 : 0};
}

}  // namespace trident
