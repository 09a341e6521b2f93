// The sbatch script that starts a plan under Slurm with srun, one task per rank, placed as
// `trident launch` places it on hosts (launcher/placement.h): one plan node per Slurm node,
// ranks in rank order, so a tp group never spans nodes.
//
// When every plan node is full (devices a multiple of devices_per_node) the script uses
// srun's block distribution with devices_per_node tasks per node. Otherwise (e.g. 10 ranks in
// nodes of 4: 4, 4, 2) it writes a SLURM_HOSTFILE naming each rank's node from the job's
// node list and uses --distribution=arbitrary. Either way --kill-on-bad-exit ends the job
// when a rank fails. The worker and the plan must be on a file system every node sees.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"

namespace trident {

struct SbatchOptions {
  std::string job_name;
  std::string worker;  // trident-worker, absolute
  std::string plan;    // the plan file, absolute
  std::vector<std::string> worker_args;
  int threads = 1;          // cpus per task and OMP_NUM_THREADS
  double time_limit_s = 0;  // 0: the partition's default (--time is in whole minutes)
};

// REQUIRES: plan.Check() passed.
std::string SbatchScript(const Plan& plan, const SbatchOptions& options);

}  // namespace trident
