// The Open MPI command (mpirun, Open MPI 4.x) that starts a placed plan.
//
// Exact placement: one application context per host, in rank order —
//   mpirun [flags] -np 2 --host a:2 -x OMP_NUM_THREADS=1 WORKER PLAN ARGS
//                : -np 2 --host b:2 -x OMP_NUM_THREADS=1 WORKER PLAN ARGS
// mpirun numbers ranks context by context, so ranks 0-1 run on a and 2-3 on b whatever the
// order of mpirun's own node list (with one `--host a:2,b:2` list Open MPI 4 moves the
// machine mpirun runs on to the front, which would shift ranks between hosts). `-x` applies
// to the context it is written in, so each context carries it. On this machine without a
// host list the command is the plain `mpirun -np N WORKER PLAN ARGS`.
//
// Flags: --allow-run-as-root only for root; --oversubscribe when asked (the launcher asks
// when this machine has fewer cores than the threads of its ranks); --bind-to none when a
// rank runs several threads (Open MPI binds each of up to 2 ranks to one core by default).
// The rank's (dp, pp, tp) coordinates need no environment: each worker computes them from
// its rank and the plan's rank map.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "launcher/placement.h"

namespace trident {

struct MpirunOptions {
  std::string mpirun = "mpirun";
  // What every rank runs, e.g. {trident-worker, plan, args...}: the same paths on every host.
  std::vector<std::string> program;
  int threads = 1;  // OMP_NUM_THREADS of every rank (the worker's --threads)
  bool allow_run_as_root = false;
  bool oversubscribe = false;
};

// REQUIRES: placement runs at least one rank.
std::vector<std::string> MpirunCommand(const Placement& placement, const MpirunOptions& options);

// The worker's --threads (or --threads=T) among `worker_args`; 1 when absent.
StatusOr<int> WorkerThreads(const std::vector<std::string>& worker_args);

// `argv` as one line a POSIX shell reads back into the same words.
std::string ShellQuote(const std::vector<std::string>& argv);
std::string ShellQuoteWord(const std::string& word);

}  // namespace trident
