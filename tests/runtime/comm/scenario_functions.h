// The scenarios of comm_scenarios.h, one function each, grouped by file. Each is run by every
// rank of `comm`.
#pragma once

#include <chrono>

#include "runtime/comm/comm.h"

namespace trident::comm_scenarios {

// How long a wait that must succeed may take before the scenario fails (never reached when
// the backend works; it turns a bug into a failure instead of a hang).
inline constexpr std::chrono::milliseconds kMustComplete = std::chrono::seconds(10);

inline int Next(const Comm& comm) { return (comm.Rank() + 1) % comm.Size(); }
inline int Prev(const Comm& comm) { return (comm.Rank() + comm.Size() - 1) % comm.Size(); }

// p2p_scenarios.cc
void SendRecvOutOfOrderTags(Comm& comm);
void SameTagKeepsOrder(Comm& comm);
void LargeMessage(Comm& comm);
void WaitTimesOut(Comm& comm);
void TestPollsUntilComplete(Comm& comm);
void MessageSizeMismatch(Comm& comm);
void RejectsBadArguments(Comm& comm);

// collective_scenarios.cc
void AllReduceSum(Comm& comm);
void AllGather(Comm& comm);
void ReduceScatterSum(Comm& comm);
void BroadcastFromEveryRoot(Comm& comm);
void BarrierWaitsForLateRank(Comm& comm);

// started_collective_scenarios.cc
void StartedAllReduceSumMatchesBlocking(Comm& comm);
void StartedReduceScatterMatchesBlocking(Comm& comm);
void StartedReduceScatterChecksSizes(Comm& comm);
void StartedAllReducesCompleteInReverseOrder(Comm& comm);
void StartDoesNotWaitForPeers(Comm& comm);
void StartedAllReduceOverlapsP2p(Comm& comm);
void TestPollsStartedAllReduce(Comm& comm);
void StartedAllReduceWaitTimesOut(Comm& comm);
void CancelRefusesStartedAllReduce(Comm& comm);

// bf16_scenarios.cc
void Bf16SendRecv(Comm& comm);
void Bf16Collectives(Comm& comm);
void Bf16SumRounds(Comm& comm);
void Bf16TypeMismatch(Comm& comm);

// split_scenarios.cc
void SplitTpCpAndGradGroups(Comm& comm);
void SplitReversedOrder(Comm& comm);
void SplitIsolatesMessages(Comm& comm);
void NestedSplit(Comm& comm);
void SplitRejectsBadLists(Comm& comm);

}  // namespace trident::comm_scenarios
