#include <gtest/gtest.h>

#include "launcher/launch.h"
#include "launcher/mpirun_command.h"
#include "tests/launcher/test_plans.h"

namespace trident {
namespace {

using Args = std::vector<std::string>;
using testing::LaunchPlan;
using testing::WritePlanFile;

MpirunOptions Options() {
  MpirunOptions o;
  o.program = {"/opt/trident/trident-worker", "/plans/p.yaml", "--steps", "5"};
  return o;
}

TEST(MpirunCommandTest, OneContextPerHostInRankOrder) {
  Placement placement;
  placement.hosts = {{"a", 8, 0, 2}, {"b", 2, 2, 2}, {"c", 4, 4, 0}};
  EXPECT_EQ(MpirunCommand(placement, Options()), (Args{"mpirun",
                                                       "-np",
                                                       "2",
                                                       "--host",
                                                       "a:2",
                                                       "-x",
                                                       "OMP_NUM_THREADS=1",
                                                       "/opt/trident/trident-worker",
                                                       "/plans/p.yaml",
                                                       "--steps",
                                                       "5",
                                                       ":",
                                                       "-np",
                                                       "2",
                                                       "--host",
                                                       "b:2",
                                                       "-x",
                                                       "OMP_NUM_THREADS=1",
                                                       "/opt/trident/trident-worker",
                                                       "/plans/p.yaml",
                                                       "--steps",
                                                       "5"}));
}

TEST(MpirunCommandTest, LocalJobWithRootOversubscriptionAndThreads) {
  Placement placement;
  placement.local = true;
  placement.hosts = {{"localhost", 4, 0, 4}};
  MpirunOptions o = Options();
  o.allow_run_as_root = true;
  o.oversubscribe = true;
  o.threads = 2;
  o.program = {"/opt/trident/trident-worker", "/plans/p.yaml", "--threads", "2"};
  EXPECT_EQ(MpirunCommand(placement, o),
            (Args{"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np",
                  "4", "-x", "OMP_NUM_THREADS=2", "/opt/trident/trident-worker", "/plans/p.yaml",
                  "--threads", "2"}));
}

TEST(MpirunCommandTest, WorkerThreadsReadsTheWorkersFlag) {
  EXPECT_EQ(*WorkerThreads({"--steps", "4"}), 1);
  EXPECT_EQ(*WorkerThreads({"--threads", "3", "--steps", "4"}), 3);
  EXPECT_EQ(*WorkerThreads({"--threads=2"}), 2);
  EXPECT_FALSE(WorkerThreads({"--threads"}).ok());
  EXPECT_FALSE(WorkerThreads({"--threads", "0"}).ok());
  EXPECT_FALSE(WorkerThreads({"--threads=two"}).ok());
}

TEST(MpirunCommandTest, ShellQuotingRoundTripsOddWords) {
  EXPECT_EQ(ShellQuote({"mpirun", "-np", "2", "/a b/p.yaml", "it's", "", "x=1,2:3"}),
            "mpirun -np 2 '/a b/p.yaml' 'it'\\''s' '' x=1,2:3");
}

LocalMachine Machine(int cores, bool root) { return LocalMachine{"box", cores, root}; }

TEST(PrepareLaunchTest, LocalPlanOnTooFewCoresIsOversubscribedWithAWarning) {
  LaunchRequest request;
  request.plan_path = WritePlanFile(LaunchPlan(1, {2, 2}, 4), "local4.yaml");
  request.worker = "/w/trident-worker";
  StatusOr<LaunchSetup> setup = PrepareLaunch(request, Machine(2, false));
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  EXPECT_TRUE(setup->oversubscribe);
  ASSERT_EQ(setup->warnings.size(), 1u);
  EXPECT_EQ(setup->warnings[0],
            "4 ranks x 1 threads on this machine's 2 cores: adding --oversubscribe; ranks share "
            "cores, so step times will not be meaningful");
  EXPECT_EQ(setup->command, (Args{"mpirun", "--oversubscribe", "-np", "4", "-x",
                                  "OMP_NUM_THREADS=1", "/w/trident-worker", request.plan_path}));

  StatusOr<LaunchSetup> roomy = PrepareLaunch(request, Machine(8, true));
  ASSERT_TRUE(roomy.ok());
  EXPECT_FALSE(roomy->oversubscribe);
  EXPECT_TRUE(roomy->warnings.empty());
  EXPECT_EQ(roomy->command[1], "--allow-run-as-root");
  EXPECT_EQ(roomy->command[2], "-np");
}

TEST(PrepareLaunchTest, ThreadsCountAgainstTheCores) {
  LaunchRequest request;
  request.plan_path = WritePlanFile(LaunchPlan(1, {1, 1}, 2), "threads.yaml");
  request.worker = "w";
  request.worker_args = {"--threads", "2"};
  StatusOr<LaunchSetup> setup = PrepareLaunch(request, Machine(2, false));
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ(setup->threads, 2);
  EXPECT_TRUE(setup->oversubscribe);
}

TEST(PrepareLaunchTest, RemoteHostsAreNotJudgedByThisMachinesCores) {
  LaunchRequest request;
  request.plan_path = WritePlanFile(LaunchPlan(2, {2, 2}, 4), "two-nodes.yaml");
  request.worker = "w";
  request.hosts = *ParseHostList("n1:4,n2:4");
  StatusOr<LaunchSetup> setup = PrepareLaunch(request, Machine(1, false));
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  EXPECT_FALSE(setup->oversubscribe);
  EXPECT_EQ(setup->placement.hosts, (std::vector<HostRanks>{{"n1", 4, 0, 4}, {"n2", 4, 4, 4}}));
  // The same hosts named as this machine count against its core.
  request.hosts = *ParseHostList("localhost:4,box:4");
  setup = PrepareLaunch(request, Machine(1, false));
  ASSERT_TRUE(setup.ok());
  EXPECT_TRUE(setup->oversubscribe);
  EXPECT_EQ(LocalRanks(setup->placement, Machine(1, false)), 8);
}

TEST(PrepareLaunchTest, MultiNodePlanRunHereGetsANote) {
  LaunchRequest request;
  request.plan_path = WritePlanFile(LaunchPlan(2, {2, 2}, 4), "here.yaml");
  request.worker = "w";
  StatusOr<LaunchSetup> setup = PrepareLaunch(request, Machine(64, false));
  ASSERT_TRUE(setup.ok());
  ASSERT_EQ(setup->warnings.size(), 1u);
  EXPECT_NE(setup->warnings[0].find("was planned for 2 nodes of 4 devices; all its ranks run on "
                                    "this machine"),
            std::string::npos);
}

// Any program on this machine's ranks (trident run's profiling steps) gets a launch's flags.
TEST(LocalMpirunCommandTest, RootAndTooFewCoresAddTheirFlags) {
  EXPECT_EQ(LocalMpirunCommand(3, 1, {"trident", "profile"}, Machine(2, true)),
            (Args{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", "-x",
                  "OMP_NUM_THREADS=1", "trident", "profile"}));
  EXPECT_EQ(LocalMpirunCommand(2, 1, {"trident"}, Machine(2, false)),
            (Args{"mpirun", "-np", "2", "-x", "OMP_NUM_THREADS=1", "trident"}));
}

TEST(PrepareLaunchTest, RefusesBadInputsBeforeAnythingStarts) {
  LaunchRequest request;
  request.worker = "w";
  request.plan_path = "/nonexistent/plan.yaml";
  EXPECT_EQ(PrepareLaunch(request, Machine(2, false)).status().code(), StatusCode::kNotFound);
  request.plan_path = WritePlanFile(LaunchPlan(2, {1, 1}, 2), "refuse.yaml");
  request.np_check = true;
  EXPECT_FALSE(PrepareLaunch(request, Machine(2, false)).ok());  // --np-check needs hosts
  request.np_check = false;
  request.hosts = *ParseHostList("a:2");
  StatusOr<LaunchSetup> setup = PrepareLaunch(request, Machine(2, false));
  ASSERT_FALSE(setup.ok());
  EXPECT_NE(setup.status().message().find("the hosts offer 2 slots"), std::string::npos);
  request.hosts = *ParseHostList("a:2,b:2");
  request.worker_args = {"--threads", "x"};
  EXPECT_FALSE(PrepareLaunch(request, Machine(2, false)).ok());
}

}  // namespace
}  // namespace trident
