// trident profile --efficiency, as trident-profile runs it (it links the device backends).
#pragma once

#include "cli/profile_command.h"

namespace trident {

// Times GEMMs of a ladder of sizes and a memory-bound pass on o.device with the runtime's
// backend (profiler/efficiency_bench.h), fits device.efficiency against o.cluster's datasheet
// figures (profiler/efficiency_fit.h), prints the table and writes a copy of the cluster file
// with that section to o.output atomically. A bad request, or a figure above the datasheet's:
// says why, writes nothing, returns 1. REQUIRES: o.cluster, o.device and o.output are set.
int RunEfficiencyProfile(const ProfileOptions& o);

}  // namespace trident
