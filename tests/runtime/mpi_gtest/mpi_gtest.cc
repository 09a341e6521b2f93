#include "tests/runtime/mpi_gtest/mpi_gtest.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/comm_factory.h"

namespace trident::mpi_gtest {
namespace {

// Set by Main for the tests (a test harness; the library itself has no globals).
struct Job {
  Comm* world = nullptr;    // what the tests run on
  Comm* harness = nullptr;  // the harness's own agreement, apart from the tests' traffic
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

}  // namespace

Comm& World() { return *job.world; }

void AgreeOnFailure(bool failed_here) {
  int failed = CountFailedRanks(*job.harness, failed_here);
  if (failed > 0 && !failed_here) {
    ADD_FAILURE() << failed << " other rank(s) failed this test; see their [rank N] lines";
  }
}

int Main(const char* program, int argc, char** argv) {
  GTEST_FLAG_SET(fail_fast, true);  // before InitGoogleTest, so the command line can override it
  ::testing::InitGoogleTest(&argc, argv);
  // The harness waits longer than any test's collectives, so a rank held up by a test's
  // timeout still joins the agreement in time.
  StatusOr<std::unique_ptr<Comm>> world = MakeWorld(std::chrono::seconds(10));
  StatusOr<std::unique_ptr<Comm>> harness = MakeWorld(std::chrono::seconds(25));
  if (!world.ok() || !harness.ok()) {
    Status status = world.ok() ? harness.status() : world.status();
    std::fprintf(stderr, "%s: %s\n", program, status.ToString().c_str());
    return 2;
  }
  job = Job{world->get(), harness->get()};
  PrintOnlyFromRankZero(job.world->Rank());
  bool failed = RUN_ALL_TESTS() != 0;
  int failed_ranks = CountFailedRanks(*job.harness, failed);
  if (job.world->Rank() == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "%s: %d of %d ranks failed\n", program, failed_ranks, job.world->Size());
  }
  job = Job{};
  return failed_ranks > 0 ? 1 : 0;
}

}  // namespace trident::mpi_gtest
