// The measurements of trident-profile (cli/profile_main.cc), which links the runtime's device
// backends: `trident` itself links none.
#pragma once

#include "cli/profile_command.h"
#include "core/model_spec.h"

namespace trident {

// trident profile MODEL --device: measures `model` on this machine (under mpirun, on every
// rank of the job; tp groups as profiler/measured_profile.h), prints the progress on stderr
// and, on rank 0, the summary, and writes o.output (profile.yaml when empty) atomically. A
// bad request: rank 0 says why and every rank returns 1. REQUIRES: o.device is set.
int RunMeasuredProfile(const ProfileOptions& o, const ModelSpec& model);

}  // namespace trident
