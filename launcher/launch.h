// Everything `trident launch` decides before it starts a job: the plan, where each rank runs,
// the mpirun command and the warnings to print. Pure given the LocalMachine, so tests can
// pose any machine. Starting and supervising the job: launcher/supervisor.h.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "launcher/hostfile.h"
#include "launcher/local_machine.h"
#include "launcher/placement.h"

namespace trident {

struct LaunchRequest {
  std::string plan_path;
  std::vector<HostSlots> hosts;  // empty: every rank on this machine
  bool np_check = false;         // the hosts must offer exactly the plan's ranks
  bool oversubscribe = false;    // asked for by the user
  std::string worker;            // trident-worker
  std::string mpirun = "mpirun";
  std::vector<std::string> worker_args;  // after `--`
};

struct LaunchSetup {
  Plan plan;
  Placement placement;
  int threads = 1;  // per rank
  bool oversubscribe = false;
  std::vector<std::string> command;
  std::vector<std::string> warnings;  // to print before the command
};

// Loads and checks the plan (Plan::Check; whether the runtime carries it out is the worker's
// check, trident-worker --check), places its ranks and builds the command. Fails (nothing has
// started) on a bad plan, hosts that cannot hold it, or bad worker options.
StatusOr<LaunchSetup> PrepareLaunch(const LaunchRequest& request, const LocalMachine& machine);

// `path` made absolute, as every rank (and an sbatch script) opens the plan: ranks on other
// hosts start in mpirun's folder only where that folder exists.
std::string AbsolutePlanPath(const std::string& path);

// Whether `local_ranks` ranks of `threads` threads need more cores than this machine has
// (Open MPI then refuses to start them without --oversubscribe).
bool TooFewCores(int local_ranks, int threads, const LocalMachine& machine);

// The mpirun command that runs `program` (argv) on `ranks` ranks of this machine, with the
// flags a launch would add (--allow-run-as-root for root, --oversubscribe when TooFewCores).
std::vector<std::string> LocalMpirunCommand(int ranks, int threads,
                                            std::vector<std::string> program,
                                            const LocalMachine& machine);

// Ranks `placement` puts on this machine.
int LocalRanks(const Placement& placement, const LocalMachine& machine);

}  // namespace trident
