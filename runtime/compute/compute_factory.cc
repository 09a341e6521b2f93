#include "runtime/compute/compute_factory.h"

#include "core/launcher_env.h"
#include "runtime/compute/cpu_compute.h"
#if TRIDENT_HAVE_CUDA
#include "runtime/compute/cuda_compute.h"
#endif

namespace trident {
namespace {

StatusOr<std::unique_ptr<Compute>> MakeCuda([[maybe_unused]] const ComputeOptions& options) {
#if TRIDENT_HAVE_CUDA
  TRIDENT_ASSIGN_OR_RETURN(
      std::unique_ptr<CudaCompute> cuda,
      CudaCompute::Create({.device = options.device_index < 0 ? LaunchedLocalRank().value_or(0)
                                                              : options.device_index}));
  return std::unique_ptr<Compute>(std::move(cuda));
#else
  return FailedPrecondition(
      "--device cuda: this build has no CUDA backend; hint: install the CUDA toolkit (nvcc, "
      "cuBLAS) and reconfigure with -DTRIDENT_CUDA=ON, or use --device cpu");
#endif
}

}  // namespace

std::vector<std::string> ComputeDevices() {
#if TRIDENT_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

StatusOr<std::unique_ptr<Compute>> MakeCompute(const ComputeOptions& options) {
  if (options.device == "cuda") return MakeCuda(options);
  if (options.device != "cpu") {
    return InvalidArgument("--device " + options.device + ": unknown device; use --device cpu" +
                           (ComputeDevices().size() > 1 ? " or --device cuda" : ""));
  }
  CpuComputeOptions cpu{.threads = options.threads};
  TRIDENT_RETURN_IF_ERROR(cpu.Validate());
  return std::unique_ptr<Compute>(std::make_unique<CpuCompute>(cpu));
}

}  // namespace trident
