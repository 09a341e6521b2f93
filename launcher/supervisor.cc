#include "launcher/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

// In the child, between fork and exec (async-signal-safe calls only): restores the signal
// mask (dispositions are left as they are: a signal the launcher ignores, the job ignores
// too), asks for SIGTERM when the launcher dies, and execs. On failure writes errno to
// `error_fd` and exits 127.
[[noreturn]] void ExecChild(char* const* argv, const sigset_t& old_mask, int error_fd,
                            pid_t parent) {
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl took effect
  execvp(argv[0], argv);
  int error = errno;
  ssize_t ignored = write(error_fd, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

// Waits for the exec to succeed (the close-on-exec pipe closes) or fail (it carries errno).
Status AwaitExec(int read_fd, const std::string& program) {
  int error = 0;
  ssize_t n;
  do {
    n = read(read_fd, &error, sizeof(error));
  } while (n < 0 && errno == EINTR);
  close(read_fd);
  if (n == static_cast<ssize_t>(sizeof(error))) {
    return IoError("cannot start " + program + ": " + std::strerror(error));
  }
  return Status::Ok();
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

timespec ToTimespec(Clock::duration d) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  if (ns < 0) ns = 0;
  return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The wait loop: reaps the child, forwards signals, enforces the limit.
JobResult Supervise(pid_t child, const sigset_t& waited, const SuperviseOptions& options) {
  JobResult result;
  const bool limited = options.time_limit_s > 0;
  Clock::time_point deadline = Clock::now() + Seconds(limited ? options.time_limit_s : 0);
  bool killed = false;
  for (;;) {
    int wait_status = 0;
    if (waitpid(child, &wait_status, WNOHANG) == child) {
      result.exit_code = ExitCodeOf(wait_status);
      return result;
    }
    Clock::duration left = limited ? deadline - Clock::now() : Seconds(1);
    if (limited && left <= Clock::duration::zero()) {
      if (!result.timed_out) {
        result.timed_out = true;
        kill(child, SIGTERM);
        deadline = Clock::now() + Seconds(options.grace_s);
      } else if (!killed) {
        killed = true;
        kill(child, SIGKILL);
        deadline = Clock::now() + Seconds(3600);
      }
      continue;
    }
    timespec timeout = ToTimespec(std::min(left, Seconds(1)));
    siginfo_t info;
    int sig = sigtimedwait(&waited, &info, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      result.signal_received = sig;
      result.forwarded = info.si_code != SI_KERNEL;
      if (result.forwarded) kill(child, sig);
    }
  }
}

}  // namespace

StatusOr<JobResult> RunSupervised(const std::vector<std::string>& argv,
                                  const SuperviseOptions& options) {
  if (argv.empty()) return InvalidArgument("no command to run");
  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  sigset_t waited, old_mask;
  sigemptyset(&waited);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&waited, sig);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  sigprocmask(SIG_BLOCK, &waited, &old_mask);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) ExecChild(c_argv.data(), old_mask, pipe_fds[1], parent);
  close(pipe_fds[1]);
  Status started = child < 0 ? IoError(std::string("cannot fork: ") + std::strerror(errno))
                             : AwaitExec(pipe_fds[0], argv[0]);
  if (child < 0) close(pipe_fds[0]);
  JobResult result;
  if (child > 0 && !started.ok()) waitpid(child, nullptr, 0);
  if (started.ok()) result = Supervise(child, waited, options);
  // Signals that arrived meanwhile stay pending; drop those this wait took care of.
  timespec zero{0, 0};
  while (sigtimedwait(&waited, nullptr, &zero) > 0) {
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (!started.ok()) return started;
  return result;
}

}  // namespace trident
