#include "launcher/slurm_script.h"

#include <cmath>

#include "launcher/mpirun_command.h"
#include "launcher/placement.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

std::string Header(const Plan& plan, const SbatchOptions& o, const std::vector<int>& nodes) {
  int64_t per_node = nodes.front();
  std::string s = "#!/bin/bash\n";
  s += "# Trident job: " + o.plan + "\n";
  s += "# " + Str(plan.devices) + " ranks (" + MeshText(plan.mesh) + ") in " +
       Str(static_cast<int64_t>(nodes.size())) + " node(s) of up to " + Str(per_node) +
       " ranks, in rank order (a tp group never spans nodes).\n";
  s += "# Written by 'trident launch --slurm'; submit with sbatch. The worker and the plan must\n";
  s += "# be on a file system every node sees.\n";
  s += "#SBATCH --job-name=" + o.job_name + "\n";
  s += "#SBATCH --nodes=" + Str(static_cast<int64_t>(nodes.size())) + "\n";
  s += "#SBATCH --ntasks=" + Str(plan.devices) + "\n";
  s += "#SBATCH --ntasks-per-node=" + Str(per_node) + "\n";
  s += "#SBATCH --cpus-per-task=" + Str(o.threads) + "\n";
  if (o.time_limit_s > 0) {
    s += "#SBATCH --time=" + Str(static_cast<int64_t>(std::ceil(o.time_limit_s / 60))) + "\n";
  }
  s += "set -euo pipefail\n";
  s += "export OMP_NUM_THREADS=" + Str(o.threads) + "\n";
  return s;
}

std::vector<std::string> Program(const SbatchOptions& o) {
  std::vector<std::string> argv{o.worker, o.plan};
  argv.insert(argv.end(), o.worker_args.begin(), o.worker_args.end());
  return argv;
}

// Full nodes: srun's block distribution puts tasks 0..n-1 on the first node, and so on.
std::string BlockLaunch(const Plan& plan, const SbatchOptions& o, const std::vector<int>& nodes) {
  std::vector<std::string> srun{"srun",
                                "--nodes=" + Str(static_cast<int64_t>(nodes.size())),
                                "--ntasks=" + Str(plan.devices),
                                "--ntasks-per-node=" + Str(nodes.front()),
                                "--cpus-per-task=" + Str(o.threads),
                                "--distribution=block",
                                "--kill-on-bad-exit=1"};
  std::vector<std::string> program = Program(o);
  srun.insert(srun.end(), program.begin(), program.end());
  return "exec " + ShellQuote(srun) + "\n";
}

// A last node that is not full: name each rank's node in a SLURM_HOSTFILE.
std::string ArbitraryLaunch(const Plan& plan, const SbatchOptions& o,
                            const std::vector<int>& nodes) {
  std::string counts;
  for (int n : nodes) counts += (counts.empty() ? "" : " ") + Str(n);
  std::string s = "# Ranks per node in rank order; the last plan node is not full.\n";
  s += "counts=(" + counts + ")\n";
  s += "mapfile -t nodes < <(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n";
  s += "hostfile=$(mktemp \"${TMPDIR:-/tmp}/trident-hosts.XXXXXX\")\n";
  s += "trap 'rm -f \"$hostfile\"' EXIT\n";
  s += "for i in \"${!counts[@]}\"; do\n";
  s += "  for ((r = 0; r < counts[i]; r++)); do echo \"${nodes[i]}\"; done\n";
  s += "done >\"$hostfile\"\n";
  s += "export SLURM_HOSTFILE=$hostfile\n";
  std::vector<std::string> srun{"srun", "--ntasks=" + Str(plan.devices),
                                "--cpus-per-task=" + Str(o.threads), "--distribution=arbitrary",
                                "--kill-on-bad-exit=1"};
  std::vector<std::string> program = Program(o);
  srun.insert(srun.end(), program.begin(), program.end());
  return s + ShellQuote(srun) + "\n";
}

}  // namespace

std::string SbatchScript(const Plan& plan, const SbatchOptions& options) {
  std::vector<int> nodes = PlanNodeSizes(plan);
  bool full = nodes.back() == nodes.front();
  return Header(plan, options, nodes) +
         (full ? BlockLaunch(plan, options, nodes) : ArbitraryLaunch(plan, options, nodes));
}

}  // namespace trident
