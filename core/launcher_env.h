// What the MPI launcher (Open MPI's mpirun, MPICH/Intel MPI's, Slurm's srun) tells each process
// through its environment, read before (or without) MPI_Init: log lines name the rank, a GPU
// rank picks its device, a profile sizes its tp groups.
#pragma once

#include <optional>

namespace trident {

// This process's rank in the launched job (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID).
std::optional<int> LaunchedRank();
// Its index among the job's processes on this node (OMPI_COMM_WORLD_LOCAL_RANK,
// MPI_LOCALRANKID, SLURM_LOCALID).
std::optional<int> LaunchedLocalRank();
// The job's process count (OMPI_COMM_WORLD_SIZE, PMI_SIZE).
std::optional<int> LaunchedWorldSize();

}  // namespace trident
