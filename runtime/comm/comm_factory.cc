#include "runtime/comm/comm_factory.h"

#if TRIDENT_HAVE_MPI
#include "runtime/comm/mpi_comm.h"
#endif
#if TRIDENT_HAVE_NCCL
#include "runtime/comm/host_device_comm.h"
#include "runtime/comm/nccl_comm.h"
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

// Device buffers through NCCL, host buffers through MPI (host_device_comm.h). NCCL keeps an MPI
// world of its own, which carries its unique ids (nccl_comm.h).
StatusOr<std::unique_ptr<Comm>> MakeNccl([[maybe_unused]] const CommOptions& options) {
#if TRIDENT_HAVE_NCCL
  TRIDENT_RETURN_IF_ERROR(NcclComm::CheckOptions(options));
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> host, MakeMpi(options));
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> nccl_host, MakeMpi(options));
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> nccl,
                           NcclComm::Create(std::move(nccl_host), options));
  return std::unique_ptr<Comm>(
      std::make_unique<HostDeviceComm>(std::move(host), std::move(nccl), IsCudaDeviceMemory));
#else
  return FailedPrecondition(
      "comm backend 'nccl' is not in this build: it needs CUDA, NCCL and MPI, and Trident was "
      "configured without one of them; hint: install the CUDA toolkit, NCCL (libnccl-dev) and "
      "libopenmpi-dev, and reconfigure with -DTRIDENT_CUDA=ON -DTRIDENT_NCCL=ON "
      "-DTRIDENT_MPI=ON");
#endif
}

}  // namespace

std::vector<std::string> WorldCommKinds() {
  std::vector<std::string> kinds;
#if TRIDENT_HAVE_MPI
  kinds.push_back("mpi");
#endif
#if TRIDENT_HAVE_NCCL
  kinds.push_back("nccl");
#endif
  return kinds;
}

StatusOr<std::unique_ptr<Comm>> MakeWorldComm(std::string_view kind, const CommOptions& options) {
  if (kind == "mpi") return MakeMpi(options);
  if (kind == "nccl") return MakeNccl(options);
  return InvalidArgument("unknown comm backend '" + std::string(kind) +
                         "'; hint: choose one of: " + KindList());
}

}  // namespace trident
