#include "core/launcher_env.h"

#include <cstdlib>
#include <initializer_list>

namespace trident {
namespace {

// The first of `names` that is set, as an integer.
std::optional<int> FirstSet(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> LaunchedRank() {
  return FirstSet({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
}

std::optional<int> LaunchedLocalRank() {
  return FirstSet({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
}

std::optional<int> LaunchedWorldSize() { return FirstSet({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}); }

}  // namespace trident
