// The world communicator of a launched job, by backend name.
//
//   TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> world, MakeWorldComm("mpi"));
//   TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> gpu_world,
//                            MakeWorldComm("nccl", {.device_stream = compute.device_stream()}));
//
// The only place outside the backends that knows which backends were built.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident {

// Backends MakeWorldComm can make in this build, e.g. {"mpi", "nccl"}.
std::vector<std::string> WorldCommKinds();

// The world communicator for backend `kind`:
//   "mpi":  starts MPI if needed (MPI_Init_thread; MPI_Finalize once every MPI communicator of
//           the process is destroyed) and duplicates MPI_COMM_WORLD (collective over it). May be
//           called again while an MPI communicator is alive; MPI cannot start again after it
//           finalized, so keep the world communicator for the whole job.
//   "nccl": GPU jobs launched with mpirun, one rank per GPU: makes the "mpi" world, then an NCCL
//           communicator of its ranks on the current CUDA device (make the compute backend
//           first: it makes its device current). Buffers are device memory; every transfer and
//           collective is ordered after the work queued on options.device_stream, which must be
//           the compute stream (InvalidArgument, with a hint, when null). See nccl_comm.h.
// Fails with InvalidArgument for an unknown kind, and FailedPrecondition for a known backend
// this build does not include. (The in-process backend has no world of its own: see
// inprocess_comm.h.)
StatusOr<std::unique_ptr<Comm>> MakeWorldComm(std::string_view kind,
                                              const CommOptions& options = {});

}  // namespace trident
