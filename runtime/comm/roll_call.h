// RollCall: every rank of a communicator reports to rank 0 before a setup step that would block
// forever on a rank that never comes (NCCL's ncclCommInitRank has no timeout), so rank 0 can
// name the ranks that did not arrive instead of waiting.
// Thread-safety: as the Comm's (one thread per rank).
#pragma once

#include <chrono>
#include <string_view>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident {

// The tag of the roll call's messages (a user tag: RollCall is a Comm client).
inline constexpr int kRollCallTag = kMaxTag - 2;

// Rank r > 0 sends rank 0 one float and waits at most `timeout` for the send; rank 0 waits at
// most `timeout` for every other rank's. Ok when all arrived; else DeadlineExceeded, on rank 0:
// "<what>: the roll call of 8 ranks (ranks [3, 5] never arrived) did not complete within
// 300000 ms; hint: ..." (another rank fails only when its own send cannot complete). Rank 0's
// pending receives are cancelled.
Status RollCall(Comm& comm, std::chrono::milliseconds timeout, std::string_view what);

}  // namespace trident
