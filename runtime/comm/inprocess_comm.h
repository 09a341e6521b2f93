// The in-process Comm backend: N ranks as N threads of one process, for unit tests.
//
//   Status s = RunInProcess(4, [](Comm& comm) -> Status {
//     std::vector<float> x = {float(comm.Rank())};
//     return comm.AllReduceSum(x);
//   });
//
// It has the semantics of the MPI backend: messages are matched per (source, tag) in the order
// they were sent, sub-communicators from Split have their own message space, and sums are
// taken in rank order, so exactly representable inputs give the same bits as MPI. It also
// checks what MPI cannot: every rank of a collective must call the same collective with the
// same sizes (InvalidArgument otherwise), and timeouts name the ranks that did not arrive.
// Sends are buffered: an Isend completes at once. StartAllReduceSum never waits: it leaves this
// rank's copy of the data in the round, and the round's result is copied into the buffer when
// Wait or Test completes the request. AbortJob ends the whole process, every rank with it; to
// stop only the ranks of one world, return an error from RunInProcess's body (or call
// InProcessWorld::Abort).
//
// Thread-safety: each rank's Comm (and its sub-communicators) is used by one thread; the
// world's shared state is guarded inside. Abort() may be called from any thread.
#pragma once

#include <functional>
#include <memory>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident {

namespace inprocess_internal {
struct WorldState;
}  // namespace inprocess_internal

// The shared state of N in-process ranks. Comms made from it keep that state alive, so the
// world object itself may be destroyed first.
class InProcessWorld {
 public:
  // REQUIRES: num_ranks >= 1 (checked).
  explicit InProcessWorld(int num_ranks);

  int NumRanks() const;
  // The world communicator of `rank`; call once per rank and hand it to that rank's thread.
  // REQUIRES: 0 <= rank < NumRanks() (checked).
  std::unique_ptr<Comm> MakeComm(int rank, const CommOptions& options = {});
  // Fails every pending and later operation of every rank with `reason` (the first reason
  // wins): the in-process counterpart of MPI_Abort, so a failed rank never leaves its peers
  // waiting for their timeouts.
  void Abort(const Status& reason);

 private:
  std::shared_ptr<inprocess_internal::WorldState> state_;
};

// Runs `body` on `num_ranks` threads, each with its own world Comm, and joins them. Returns ok
// when every rank returned ok; otherwise the first failure, prefixed "rank R", after aborting
// the world so the other ranks return promptly. An exception escaping `body` counts as a
// failure (Internal).
Status RunInProcess(int num_ranks, const std::function<Status(Comm&)>& body,
                    const CommOptions& options = {});

}  // namespace trident
