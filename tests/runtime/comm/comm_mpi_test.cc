// The MPI backend: every shared scenario (comm_scenarios.h) on the world communicator of an
// mpirun job (ctest runs it with 2 and 4 ranks).
//
// Rank 0 prints gtest's usual output; the other ranks print only their failures, tagged with
// their rank. After each scenario the ranks agree, on a communicator of their own, whether any
// of them failed; then every rank marks the scenario failed and, with --gtest_fail_fast (on by
// default here), all stop together rather than run on with peers that went elsewhere. The exit
// status is non-zero on every rank if any rank failed, and timeouts bound every wait, so a
// broken backend fails in seconds instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/comm_factory.h"
#include "tests/runtime/comm/comm_scenarios.h"

namespace trident {
namespace {

using comm_scenarios::Scenario;

// Set by main for the tests (a test harness; the library itself has no globals).
struct Job {
  Comm* world = nullptr;    // what the scenarios run on
  Comm* harness = nullptr;  // the harness's own agreement, apart from the scenarios' traffic
};
Job job;

// Stands in for gtest's printer on ranks other than 0: prints failures only, with the rank.
// (It must not ask gtest for the current test inside OnTestPartResult: gtest holds its lock
// there, so it remembers the name from OnTestStart.)
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}

  void OnTestStart(const ::testing::TestInfo& test) override {
    test_name_ = std::string(test.test_suite_name()) + "." + test.name();
  }

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: Failure\n%s\n", rank_, test_name_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_name_;
};

// The number of ranks that report `failed`, or all of them if the ranks cannot agree (a
// timeout: some rank is stuck or gone).
int CountFailedRanks(Comm& comm, bool failed) {
  std::vector<float> count = {failed ? 1.0f : 0.0f};
  if (!comm.AllReduceSum(count).ok()) return comm.Size();
  return static_cast<int>(count[0]);
}

// Ends every test: all ranks learn whether any of them failed it, and fail it too.
void AgreeOnFailure(bool failed_here) {
  int failed = CountFailedRanks(*job.harness, failed_here);
  if (failed > 0 && !failed_here) {
    ADD_FAILURE() << failed << " other rank(s) failed this test; see their [rank N] lines";
  }
}

class MpiScenarioTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(MpiScenarioTest, Passes) {
  GetParam().run(*job.world);
  AgreeOnFailure(HasFailure());
}

// MPI only: the in-process backend cannot tell different lists from a missing rank, and
// reports a timeout instead.
TEST(MpiCommTest, SplitWithDifferentListsFailsOnEveryRank) {
  Comm& world = *job.world;
  if (world.Size() < 3) GTEST_SKIP() << "needs 3 ranks for two lists with the same leader";
  std::vector<int> ranks = {0};
  for (int r = 1; r < world.Size(); ++r) ranks.push_back(world.Rank() == 0 ? r : world.Size() - r);
  StatusOr<std::unique_ptr<Comm>> sub = world.Split(ranks);
  EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument) << sub.status().ToString();
  EXPECT_NE(sub.status().message().find("passed different rank lists"), std::string::npos);
  EXPECT_TRUE(world.Barrier().ok());  // and the world communicator is still fine
  AgreeOnFailure(HasFailure());
}

std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(Mpi, MpiScenarioTest, ::testing::ValuesIn(comm_scenarios::AllScenarios()),
                         ScenarioName);

void PrintOnlyFromRankZero(int rank) {
  if (rank == 0) return;
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new FailurePrinter(rank));
}

StatusOr<std::unique_ptr<Comm>> MakeWorld(std::chrono::milliseconds collective_timeout) {
  CommOptions options;
  options.collective_timeout = collective_timeout;
  return MakeWorldComm("mpi", options);
}

int Run() {
  // The harness waits longer than any scenario, so a rank held up by a scenario's timeout
  // still joins the agreement in time.
  StatusOr<std::unique_ptr<Comm>> world = MakeWorld(std::chrono::seconds(10));
  StatusOr<std::unique_ptr<Comm>> harness = MakeWorld(std::chrono::seconds(25));
  if (!world.ok() || !harness.ok()) {
    Status status = world.ok() ? harness.status() : world.status();
    std::fprintf(stderr, "comm_mpi_test: %s\n", status.ToString().c_str());
    return 2;
  }
  job = Job{world->get(), harness->get()};
  PrintOnlyFromRankZero(job.world->Rank());
  bool failed = RUN_ALL_TESTS() != 0;
  int failed_ranks = CountFailedRanks(*job.harness, failed);
  if (job.world->Rank() == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "comm_mpi_test: %d of %d ranks failed\n", failed_ranks, job.world->Size());
  }
  job = Job{};
  return failed_ranks > 0 ? 1 : 0;
}

}  // namespace
}  // namespace trident

int main(int argc, char** argv) {
  GTEST_FLAG_SET(fail_fast, true);  // before InitGoogleTest, so the command line can override it
  ::testing::InitGoogleTest(&argc, argv);
  return trident::Run();
}
