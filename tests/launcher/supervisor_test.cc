#include "launcher/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(SupervisorTest, ReturnsTheJobsExitStatus) {
  StatusOr<JobResult> ok = RunSupervised({"true"}, {});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_FALSE(ok->timed_out);
  StatusOr<JobResult> three = RunSupervised({"sh", "-c", "exit 3"}, {});
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->exit_code, 3);
  StatusOr<JobResult> killed = RunSupervised({"sh", "-c", "kill -KILL $$"}, {});
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(killed->exit_code, 128 + SIGKILL);
}

TEST(SupervisorTest, AProgramThatDoesNotExistIsAnError) {
  StatusOr<JobResult> job = RunSupervised({"/nonexistent/mpirun", "-np", "2"}, {});
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(), "cannot start /nonexistent/mpirun: No such file or directory");
}

TEST(SupervisorTest, TimeLimitStopsTheJobWithSigterm) {
  Clock::time_point start = Clock::now();
  StatusOr<JobResult> job = RunSupervised({"sleep", "30"}, {0.3, 5});
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->timed_out);
  EXPECT_EQ(job->exit_code, 128 + SIGTERM);
  EXPECT_LT(SecondsSince(start), 3);
}

TEST(SupervisorTest, AJobThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  Clock::time_point start = Clock::now();
  StatusOr<JobResult> job = RunSupervised({"sh", "-c", "trap '' TERM; exec sleep 30"}, {0.2, 0.5});
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->timed_out);
  EXPECT_EQ(job->exit_code, 128 + SIGKILL);
  double elapsed = SecondsSince(start);
  EXPECT_GE(elapsed, 0.6);
  EXPECT_LT(elapsed, 5);
}

// The job sends SIGTERM to its parent (the supervisor), which passes it on to the job.
TEST(SupervisorTest, ForwardsSigtermToTheJob) {
  Clock::time_point start = Clock::now();
  StatusOr<JobResult> job = RunSupervised({"sh", "-c", "kill -TERM $PPID; exec sleep 30"}, {});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->signal_received, SIGTERM);
  EXPECT_TRUE(job->forwarded);
  EXPECT_EQ(job->exit_code, 128 + SIGTERM);
  EXPECT_FALSE(job->timed_out);
  EXPECT_LT(SecondsSince(start), 5);
  // The supervisor restored its signal mask: SIGTERM is not left blocked.
  sigset_t mask;
  sigprocmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_FALSE(sigismember(&mask, SIGTERM));
}

}  // namespace
}  // namespace trident
