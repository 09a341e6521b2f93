// MPI_Init/MPI_Finalize and the checking wrapper behind TRIDENT_MPI_CALL.
#include <mpi.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "runtime/comm/mpi_comm.h"  // IWYU pragma: associated

namespace trident {
namespace mpi_internal {
namespace {

// "/work/main/runtime/comm/mpi_comm.cc" -> "runtime/comm/mpi_comm.cc".
std::string_view ShortFile(std::string_view file) {
  size_t at = file.rfind("runtime/comm/");
  return at == std::string_view::npos ? file : file.substr(at);
}

std::string ErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return "MPI error code " + std::to_string(code);
  }
  return std::string(text, static_cast<size_t>(length));
}

}  // namespace

void ReportIfError(const Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "trident: warning: %s\n", status.message().c_str());
}

Status MpiResult(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return Status::Ok();
  std::string_view name(call);
  name = name.substr(0, name.find('('));
  return Internal(std::string(name) + " failed at " + std::string(ShortFile(file)) + ":" +
                  std::to_string(line) + ": " + ErrorString(code));
}

}  // namespace mpi_internal

StatusOr<std::shared_ptr<MpiSession>> MpiSession::Start() {
  // MPI is process-wide state: mirror it with one session per process, shared by every
  // caller while any of them holds it. This is the backend's only static.
  static std::mutex mu;
  static std::weak_ptr<MpiSession> live;
  std::lock_guard<std::mutex> lock(mu);
  if (std::shared_ptr<MpiSession> session = live.lock()) return session;
  TRIDENT_ASSIGN_OR_RETURN(std::shared_ptr<MpiSession> session, Initialize());
  live = session;
  return session;
}

StatusOr<std::shared_ptr<MpiSession>> MpiSession::Initialize() {
  int finalized = 0;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Finalized(&finalized));
  if (finalized) {
    return FailedPrecondition(
        "MPI was already finalized in this process and cannot start again; hint: keep the "
        "world communicator (or the MpiSession) for the whole job");
  }
  int initialized = 0;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    TRIDENT_MPI_RETURN_IF_ERROR(MPI_Query_thread(&provided));
  } else {
    TRIDENT_MPI_RETURN_IF_ERROR(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
  }
  std::shared_ptr<MpiSession> session(new MpiSession(!initialized));
  if (provided < MPI_THREAD_SERIALIZED) {
    return FailedPrecondition("MPI provides thread level " + std::to_string(provided) +
                              " but Trident needs MPI_THREAD_SERIALIZED; hint: use an MPI "
                              "built with thread support (Open MPI 4 has it)");
  }
  return session;
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  Status status = TRIDENT_MPI_CALL(MPI_Finalized(&finalized));
  if (status.ok() && !finalized) status = TRIDENT_MPI_CALL(MPI_Finalize());
  mpi_internal::ReportIfError(status);
}

}  // namespace trident
