// Argument checks and error messages shared by every Comm backend, so that each backend
// rejects the same calls with the same words. Internal to runtime/comm.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident::comm_internal {

// Every timeout message contains this phrase.
inline constexpr std::string_view kTimeoutPhrase = " did not complete within ";

// "Irecv from rank 1 (tag 99, 4 floats)" / "Isend to rank 2 (tag 3, 8 floats)".
std::string DescribeTransfer(bool is_send, int peer, int tag, const Wire& data);

// "AllReduceSum of 1024 floats": a started collective, in messages.
std::string DescribeCollective(std::string_view op, const Wire& data);

// The hint of a timed-out Wait on a transfer, in the backends that match by tag.
inline constexpr std::string_view kTransferHint =
    "the peer may have failed, or not posted the matching Isend/Irecv with the same tag";

// The hint of a timed-out Wait on a started collective.
inline constexpr std::string_view kStartedCollectiveHint =
    "a rank may have failed, or not started the same collective";

// "[0, 2, 3]".
std::string RankList(const std::vector<int>& ranks);

// "<what> did not complete within 50 ms; hint: <hint>" (DeadlineExceeded).
Status TimeoutError(std::string_view what, std::chrono::milliseconds waited, std::string_view hint);

Status CheckPeer(std::string_view op, std::string_view role, int peer, int size);
Status CheckTag(std::string_view op, int tag);
// MPI counts are ints.
Status CheckCount(std::string_view op, const Wire& data);
// Also one element type.
Status CheckAllGatherSizes(const Wire& send, const Wire& recv, int size);
Status CheckReduceScatterSizes(const Wire& send, const Wire& recv, int size);
Status CheckNoOverlap(std::string_view op, const Wire& send, const Wire& recv);
Status CheckSplitRanks(const std::vector<int>& ranks, int rank, int size);

// A request that this Comm did not make, or that already completed.
Status UnknownRequestError(std::string_view op);
Status CancelSendError(std::string_view transfer);
// `collective` as DescribeCollective writes it.
Status CancelCollectiveError(std::string_view collective);
// A received message whose length differs from the buffer; `got` is a count or "more".
// `data`: the receive buffer, whose element type names the unit of `got`.
Status MessageSizeError(std::string_view transfer, std::string_view got, const Wire& data);
// Every call after a collective timed out.
Status BrokenCommError(std::string_view op, std::string_view cause);

// For AbortJob: flushes std::cout, std::cerr and every C output stream, so that what the
// caller printed survives the abort.
void FlushOutputStreams();

}  // namespace trident::comm_internal
