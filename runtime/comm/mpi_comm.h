// The MPI Comm backend for CPU jobs launched with mpirun.
//
//   TRIDENT_ASSIGN_OR_RETURN(std::shared_ptr<MpiSession> session, MpiSession::Start());
//   std::unique_ptr<Comm> world = MakeMpiWorldComm(session);   // or MakeWorldComm("mpi")
//
// Every MPI call goes through TRIDENT_MPI_CALL, which turns a failure into a Status naming the
// call, file:line and MPI's error string (communicators use MPI_ERRORS_RETURN). Waits and
// collectives poll MPI_Test until their deadline, so a dead or missing peer gives a timeout
// error instead of a hang; collectives use the non-blocking MPI-3 forms for that reason. Split
// uses MPI_Comm_create_group, which only the listed ranks call; as that cannot time out, the
// listed ranks first meet with timed messages on the parent (checking that they passed the same
// list), so a missing rank gives a timeout there instead of a hang inside MPI.
//
// This header is included only inside runtime/comm, and only when built with MPI.
#pragma once

#include <mpi.h>

#include <memory>

#include "core/status.h"
#include "runtime/comm/comm.h"

namespace trident {

namespace mpi_internal {
// A Status for an MPI return code: ok for MPI_SUCCESS, else Internal("MPI_Isend failed at
// runtime/comm/mpi_comm.cc:120: MPI_ERR_RANK: invalid rank").
Status MpiResult(int code, const char* call, const char* file, int line);
// For destructors, which cannot return a status: prints a non-ok status to stderr.
void ReportIfError(const Status& status);
}  // namespace mpi_internal

// A Status for one MPI call. `call` is the full call expression; its name is reported.
#define TRIDENT_MPI_CALL(call) ::trident::mpi_internal::MpiResult((call), #call, __FILE__, __LINE__)
#define TRIDENT_MPI_RETURN_IF_ERROR(call) TRIDENT_RETURN_IF_ERROR(TRIDENT_MPI_CALL(call))

// MPI for this process: MPI_Init_thread (MPI_THREAD_SERIALIZED) when started, MPI_Finalize when
// the last owner lets go. Every MpiComm holds the session, so MPI outlives its communicators.
// There is at most one session per process: Start returns the live one if there is one. MPI
// cannot start again once finalized, so keep a communicator (or the session) for the whole
// job. If MPI was initialized by someone else, the session neither initializes nor finalizes it.
// Thread-safe.
class MpiSession {
 public:
  // Fails if MPI was already finalized, or provides less than MPI_THREAD_SERIALIZED.
  static StatusOr<std::shared_ptr<MpiSession>> Start();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  explicit MpiSession(bool owns) : owns_(owns) {}
  static StatusOr<std::shared_ptr<MpiSession>> Initialize();

  bool owns_;
};

// The world communicator: a duplicate of MPI_COMM_WORLD (so Trident's messages never meet a
// library's), with MPI_ERRORS_RETURN. Collective over MPI_COMM_WORLD.
StatusOr<std::unique_ptr<Comm>> MakeMpiWorldComm(std::shared_ptr<MpiSession> session,
                                                 const CommOptions& options = {});

}  // namespace trident
