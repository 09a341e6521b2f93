// The shared state behind the in-process backend (inprocess_comm.h): mailboxes for messages,
// rounds for collectives and rendezvous for Split. Internal to runtime/comm.
//
// One mutex guards everything and one condition variable announces every change; tests run a
// handful of ranks, so simplicity wins over throughput. Communicators are told apart by a
// context id (0 is the world; Split allocates new ones), like MPI's communicator contexts.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident::inprocess_internal {

using Clock = std::chrono::steady_clock;

// The outcome of one Isend or Irecv; guarded by WorldState::mu.
struct Transfer {
  bool done = false;
  Status status;
};

// Messages and collectives hold their elements as floats whatever they travel as: bf16 widens
// exactly and is rounded back (a sum once) when it lands in a bf16 buffer.
std::vector<float> ToFloats(const Wire& data);
// Writes data.count values from `values` into `data`, in its element type.
void WriteFloats(const float* values, const Wire& data);

struct Message {
  int context = 0;
  int source = 0;  // rank in the communicator of `context`
  int tag = 0;
  WireType type = WireType::kFp32;
  std::vector<float> data;
};

struct PostedRecv {
  int context = 0;
  int source = 0;
  int tag = 0;
  Wire buffer;
  std::shared_ptr<Transfer> transfer;
  std::string description;  // for errors: "Irecv from rank 1 (tag 3, 4 floats)"
};

// What arrived for one world rank: messages nobody asked for yet, and receives nothing matched
// yet, each in arrival order.
struct Mailbox {
  std::deque<Message> unexpected;
  std::deque<PostedRecv> posted;
};

enum class CollectiveKind {
  kAllReduceSum,
  kAllGather,
  kReduceScatterSum,
  kBroadcast,
  kBarrier,
  kStartAllReduceSum,
  kStartReduceScatterSum,
};

// One rank's part of a collective.
struct Contribution {
  CollectiveKind kind = CollectiveKind::kBarrier;
  size_t send_count = 0;
  size_t recv_count = 0;
  int root = 0;
  std::vector<float> data;  // empty for Barrier and for non-root Broadcast ranks
};

// One collective call on one communicator. The last rank to arrive computes `result` (the
// whole output; each rank copies its slice), and the last to leave erases the round. A rank
// leaves when its blocking call returns or its started collective's request completes (or its
// Comm is destroyed); a rank whose blocking call timed out never leaves.
struct Round {
  std::vector<std::optional<Contribution>> parts;  // by communicator rank
  int arrived = 0;
  int departed = 0;
  bool done = false;
  Status status;
  std::vector<float> result;
};

// One Split: the listed ranks meet here and share the new context id.
struct Rendezvous {
  int context = 0;
  std::vector<bool> present;  // by index in the rank list
  int arrived = 0;
  int departed = 0;
};

// (context, sequence number): a communicator's k-th collective call.
using RoundKey = std::pair<int, int64_t>;

// (parent context, rank list, how many times this list was split from that parent before).
using SplitKey = std::tuple<int, std::vector<int>, int>;

struct WorldState {
  explicit WorldState(int num_ranks) : mailboxes(num_ranks) {}

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Mailbox> mailboxes;    // by world rank
  std::map<RoundKey, Round> rounds;  // collectives in progress
  std::map<SplitKey, Rendezvous> splits;
  int next_context = 1;
  Status abort_status;  // not ok once aborted
};

// The functions below REQUIRE state.mu held.

// Hands `message` to the oldest receive posted at `world_rank` that matches it, or queues it.
void DeliverLocked(WorldState& state, int world_rank, Message message);
// Matches `recv` with the oldest queued message at `world_rank`, or posts it.
void PostRecvLocked(WorldState& state, int world_rank, PostedRecv recv);
// Removes the posted receive of `transfer` at `world_rank`, if it is still posted.
void WithdrawLocked(WorldState& state, int world_rank, const Transfer* transfer);
// Checks that all parts agree and computes the round's result; sets done.
void FinishRound(Round& round);
// Adds `part` as rank `rank` of a `size`-rank communicator to round `key` (creating it), and
// finishes the round and wakes its waiters if that was the last part. Never waits.
Round& JoinRoundLocked(WorldState& state, const RoundKey& key, int rank, int size,
                       Contribution part);
// Leaves round `key`: copies out.count elements of its result, starting at `offset`, into `out`
// if the round succeeded, and erases the round if this was the last of `size` ranks to leave.
// Returns the round's status. REQUIRES: the round exists and this rank has not left it.
Status LeaveRoundLocked(WorldState& state, const RoundKey& key, int size, const Wire& out,
                        size_t offset);
// The communicator ranks whose part `round` still lacks, for timeout messages.
std::vector<int> MissingRanks(const Round& round);

enum class WaitResult { kReady, kAborted, kTimedOut };
// Waits on state.cv until `ready()` (checked first), the world is aborted, or `deadline`.
WaitResult WaitLocked(WorldState& state, std::unique_lock<std::mutex>& lock,
                      Clock::time_point deadline, const std::function<bool()>& ready);

}  // namespace trident::inprocess_internal
