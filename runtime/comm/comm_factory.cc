#include "runtime/comm/comm_factory.h"

#if TRIDENT_HAVE_MPI
#include "runtime/comm/mpi_comm.h"
#endif

namespace trident {
namespace {

std::string KindList() {
  std::string text;
  for (const std::string& kind : WorldCommKinds()) text += (text.empty() ? "" : ", ") + kind;
  return text.empty() ? "none" : text;
}

StatusOr<std::unique_ptr<Comm>> MakeMpi([[maybe_unused]] const CommOptions& options) {
#if TRIDENT_HAVE_MPI
  TRIDENT_ASSIGN_OR_RETURN(std::shared_ptr<MpiSession> session, MpiSession::Start());
  return MakeMpiWorldComm(std::move(session), options);
#else
  return FailedPrecondition(
      "comm backend 'mpi' is not in this build: Trident was configured without MPI; hint: "
      "apt-get install libopenmpi-dev and reconfigure with -DTRIDENT_MPI=ON");
#endif
}

}  // namespace

std::vector<std::string> WorldCommKinds() {
#if TRIDENT_HAVE_MPI
  return {"mpi"};
#else
  return {};
#endif
}

StatusOr<std::unique_ptr<Comm>> MakeWorldComm(std::string_view kind, const CommOptions& options) {
  if (kind == "mpi") return MakeMpi(options);
  return InvalidArgument("unknown comm backend '" + std::string(kind) + "'; hint: choose one of: " +
                         KindList() + " (the NCCL backend is not implemented yet)");
}

}  // namespace trident
