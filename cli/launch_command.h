// trident launch, as other commands reach it: `trident run` launches the plan it made.
#pragma once

#include <string>
#include <vector>

namespace trident {

struct LaunchFlags {
  std::string plan;
  std::string hostfile;
  std::string hosts;
  bool np_check = false;
  bool dry_run = false;
  bool oversubscribe = false;
  double time_limit_s = 0;
  bool slurm = false;
  bool submit = false;
  std::string sbatch_path;
  std::vector<std::string> worker_args;
};

// What `trident launch` does with these flags; returns its exit status (the job's; 124 when
// the time limit was hit; 1 when nothing could start).
int RunLaunch(const LaunchFlags& flags);

}  // namespace trident
