// StreamComm: the NCCL backend's ordering (nccl_comm.h) on the CPU, over a communicator with
// MPI's semantics, so the code that drives NCCL can be tested without a GPU.
//
//   Status s = RunInProcess(4, [](Comm& world) -> Status {
//     TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> nccl_like, MakeStreamComm(world, options));
//     ...  // what deadlocks on NCCL's streams times out here instead
//   });
//
// What it keeps of NCCL, and tests therefore see:
//  - Tags are checked (0..kMaxTag) but not used for matching: a pair's transfers match in the
//    order they are posted, so a receive takes whatever the peer sent next.
//  - Isend and Irecv only queue; the queue is launched as one group at the next Wait, Test,
//    collective, Barrier or Split on this communicator.
//  - One stream per communicator: launched groups and collectives run one at a time, in launch
//    order. A group's transfers progress together and complete together, once each of them has
//    met its peer's; a send meets its receive only when both are running on their streams (the
//    rendezvous that NCCL falls back to for large messages, so a layout that passes here does
//    not rely on NCCL's buffering of small ones).
//  - Blocking collectives run on the stream after the queue and wait for it; started
//    collectives complete with their turn on the stream. Barrier and Split are the host
//    communicator's (after launching the queue), as in NCCL. Zero-length transfers and
//    collectives launch nothing.
//  - Cancel withdraws a receive still queued; a launched one that has not completed breaks the
//    communicator (every later call fails), as NCCL's abort does.
// What it leaves out: the GPU's compute stream (host code runs in order), and NCCL's lazy
// connection, whose first transfer between two ranks also blocks the launching call (the
// runtime connects its pipeline links when it makes them).
//
// A thread per communicator plays its stream over a communicator of its own (a Split of the
// host one made by MakeStreamComm), so host calls and stream work never share a Comm. The
// destructor waits up to the collective timeout for the launched work (as NcclComm's does),
// then drops what is left.
// Thread-safety: one thread at a time, as for every Comm.
#pragma once

#include <memory>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident {

// A StreamComm of `host`'s ranks (collective over `host`: two Splits), whose sub-communicators
// are StreamComms too; it may outlive `host`. Blocking collectives and the destructor's drain
// wait up to options.collective_timeout.
StatusOr<std::unique_ptr<Comm>> MakeStreamComm(Comm& host, const CommOptions& options = {});

}  // namespace trident
