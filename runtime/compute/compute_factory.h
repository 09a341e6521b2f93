// The compute backend of a device, by name.
//
//   TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Compute> compute,
//                            MakeCompute({.device = "cuda", .device_index = local_rank}));
//
// The only place outside the backends that knows which were built.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/compute/compute.h"

namespace trident {

struct ComputeOptions {
  std::string device = "cpu";  // "cpu" or "cuda"
  int threads = 1;             // cpu: threads per backend
  // cuda: which GPU of this machine; -1: the rank's index on its node from the launcher's
  // environment (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID; 0 without one),
  // so that the ranks of a node take one GPU each.
  int device_index = -1;
};

// Devices MakeCompute can make in this build, e.g. {"cpu", "cuda"}.
std::vector<std::string> ComputeDevices();

// The backend for options.device. InvalidArgument for an unknown device or bad options;
// FailedPrecondition for "cuda" in a build without CUDA or on a machine without a usable GPU
// (the message names the reason and the fix).
StatusOr<std::unique_ptr<Compute>> MakeCompute(const ComputeOptions& options);

}  // namespace trident
