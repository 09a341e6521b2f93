// Runs one job command (mpirun, sbatch) as a child process and supervises it: SIGINT and
// SIGTERM sent to this process are passed on, a wall-clock limit ends it, and its exit status
// comes back.
//
// Signals: a Ctrl-C at the terminal reaches the whole foreground process group — the child
// included — so only signals sent by a process (kill, a scheduler, `timeout`) are forwarded;
// mpirun then ends its ranks itself. The child also gets SIGTERM if this process dies
// (PR_SET_PDEATHSIG), so a killed launcher does not leave a job behind.
// Time limit: SIGTERM to the child when it is hit, SIGKILL after the grace period.
// Not thread-safe: blocks SIGINT, SIGTERM and SIGCHLD in the calling thread while it waits
// (call it from a single-threaded program, as the CLI is).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace trident {

struct SuperviseOptions {
  double time_limit_s = 0;  // 0: no limit
  double grace_s = 10;      // between SIGTERM and SIGKILL once the limit is hit
};

struct JobResult {
  int exit_code = 0;        // the child's status, 128 + N when signal N ended it
  bool timed_out = false;   // the time limit was hit (the child was stopped)
  int signal_received = 0;  // the last SIGINT or SIGTERM this process got while waiting
  bool forwarded = false;   // ... and passed on (it came from a process, not the terminal)
};

// Starts `argv` (argv[0] looked up on $PATH) with this process's stdin, stdout, stderr and
// environment and waits for it. Fails only when it cannot start (fork or exec failed).
StatusOr<JobResult> RunSupervised(const std::vector<std::string>& argv,
                                  const SuperviseOptions& options);

}  // namespace trident
