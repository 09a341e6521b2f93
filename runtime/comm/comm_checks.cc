#include "runtime/comm/comm_checks.h"

#include <climits>
#include <cstdio>
#include <iostream>
#include <set>

namespace trident::comm_internal {
namespace {

std::string Str(size_t n) { return std::to_string(n); }
std::string Str(int n) { return std::to_string(n); }

}  // namespace

std::string DescribeTransfer(bool is_send, int peer, int tag, const Wire& data) {
  std::string text = is_send ? "Isend to rank " : "Irecv from rank ";
  return text + Str(peer) + " (tag " + Str(tag) + ", " + data.CountText() + ")";
}

std::string DescribeCollective(std::string_view op, const Wire& data) {
  return std::string(op) + " of " + data.CountText();
}

std::string RankList(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

Status TimeoutError(std::string_view what, std::chrono::milliseconds waited,
                    std::string_view hint) {
  std::string text(what);
  text += kTimeoutPhrase;
  text += std::to_string(waited.count()) + " ms";
  if (!hint.empty()) text += "; hint: " + std::string(hint);
  return DeadlineExceeded(std::move(text));
}

Status CheckPeer(std::string_view op, std::string_view role, int peer, int size) {
  if (peer >= 0 && peer < size) return Status::Ok();
  return InvalidArgument(std::string(op) + ": " + std::string(role) + " " + Str(peer) +
                         " is not a rank of this communicator (ranks 0.." + Str(size - 1) + ")");
}

Status CheckTag(std::string_view op, int tag) {
  if (tag >= 0 && tag <= kMaxTag) return Status::Ok();
  return InvalidArgument(std::string(op) + ": tag " + Str(tag) + " is outside 0.." + Str(kMaxTag) +
                         " (larger tags are reserved)");
}

Status CheckCount(std::string_view op, const Wire& data) {
  if (data.count <= static_cast<size_t>(INT_MAX)) return Status::Ok();
  return InvalidArgument(std::string(op) + ": " + data.CountText() + " is more than " +
                         Str(INT_MAX) + " in one call; hint: split the buffer into chunks");
}

namespace {

Status CheckSameType(std::string_view op, const Wire& send, const Wire& recv) {
  if (send.type == recv.type) return Status::Ok();
  return InvalidArgument(std::string(op) + ": send holds " + send.CountText() + " but recv " +
                         recv.CountText() + "; hint: both buffers need one element type");
}

}  // namespace

Status CheckAllGatherSizes(const Wire& send, const Wire& recv, int size) {
  TRIDENT_RETURN_IF_ERROR(CheckSameType("AllGather", send, recv));
  if (recv.count == send.count * static_cast<size_t>(size)) return Status::Ok();
  return InvalidArgument("AllGather: recv holds " + recv.CountText() + " but needs " + Str(size) +
                         " ranks x " + Str(send.count) + " = " +
                         Str(send.count * static_cast<size_t>(size)));
}

Status CheckReduceScatterSizes(const Wire& send, const Wire& recv, int size) {
  TRIDENT_RETURN_IF_ERROR(CheckSameType("ReduceScatterSum", send, recv));
  if (send.count == recv.count * static_cast<size_t>(size)) return Status::Ok();
  return InvalidArgument("ReduceScatterSum: send holds " + send.CountText() + " but needs " +
                         Str(size) + " ranks x " + Str(recv.count) + " = " +
                         Str(recv.count * static_cast<size_t>(size)));
}

Status CheckNoOverlap(std::string_view op, const Wire& send, const Wire& recv) {
  if (send.count == 0 || recv.count == 0) return Status::Ok();
  const char* send_begin = static_cast<const char*>(send.data);
  const char* recv_begin = static_cast<const char*>(recv.data);
  if (send_begin + send.bytes() <= recv_begin || recv_begin + recv.bytes() <= send_begin) {
    return Status::Ok();
  }
  return InvalidArgument(std::string(op) + ": send and recv buffers overlap");
}

Status CheckSplitRanks(const std::vector<int>& ranks, int rank, int size) {
  if (ranks.empty()) return InvalidArgument("Split: the rank list is empty");
  std::set<int> seen;
  for (int r : ranks) {
    TRIDENT_RETURN_IF_ERROR(CheckPeer("Split", "rank", r, size));
    if (!seen.insert(r).second) {
      return InvalidArgument("Split: rank " + Str(r) + " appears twice in the rank list");
    }
  }
  if (seen.count(rank) == 0) {
    return InvalidArgument("Split: the rank list does not contain the calling rank " + Str(rank) +
                           "; hint: only the listed ranks call Split");
  }
  return Status::Ok();
}

Status UnknownRequestError(std::string_view op) {
  return InvalidArgument(std::string(op) +
                         ": the request was not made by this communicator or already completed");
}

Status CancelSendError(std::string_view transfer) {
  return InvalidArgument("Cancel: " + std::string(transfer) +
                         " is a send, and sends cannot be cancelled; hint: Wait for it");
}

Status CancelCollectiveError(std::string_view collective) {
  return InvalidArgument("Cancel: " + std::string(collective) +
                         " is a started collective, and collectives cannot be cancelled; hint: "
                         "Wait for it");
}

Status MessageSizeError(std::string_view transfer, std::string_view got, const Wire& data) {
  return InvalidArgument(std::string(transfer) + ": the message holds " + std::string(got) +
                         data.Unit() +
                         "; hint: sender and receiver must use the same count and element type");
}

Status BrokenCommError(std::string_view op, std::string_view cause) {
  return FailedPrecondition(std::string(op) + ": the communicator is unusable after an earlier " +
                            std::string(cause) + "; hint: abort the job");
}

void FlushOutputStreams() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

}  // namespace trident::comm_internal
