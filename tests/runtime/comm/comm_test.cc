// The in-process backend: every shared scenario (comm_scenarios.h) with 1 to 4 ranks, plus
// what only this backend checks (failure propagation, mismatched collectives, timeouts that
// name the missing ranks), AbortJob, and the factory's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/comm/comm_factory.h"
#include "runtime/comm/inprocess_comm.h"
#include "runtime/comm/roll_call.h"
#include "tests/runtime/comm/comm_scenarios.h"

namespace trident {
namespace {

using comm_scenarios::Scenario;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

CommOptions TimeoutAfter(milliseconds timeout) {
  CommOptions options;
  options.collective_timeout = timeout;
  return options;
}

class InProcessScenarioTest : public ::testing::TestWithParam<std::tuple<int, Scenario>> {};

TEST_P(InProcessScenarioTest, Passes) {
  const auto& [num_ranks, scenario] = GetParam();
  Status status = RunInProcess(
      num_ranks,
      [&](Comm& comm) {
        scenario.run(comm);
        // A rank that failed an assertion aborts the world, so its peers do not wait for it.
        if (comm_scenarios::TakeThreadFailure()) return Internal("a check failed on this rank");
        return Status::Ok();
      },
      TimeoutAfter(std::chrono::seconds(10)));
  EXPECT_TRUE(status.ok()) << status.ToString();
}

std::string ScenarioTestName(
    const ::testing::TestParamInfo<InProcessScenarioTest::ParamType>& info) {
  return std::get<1>(info.param).name + "_" + std::to_string(std::get<0>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Ranks, InProcessScenarioTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::ValuesIn(comm_scenarios::AllScenarios())),
                         ScenarioTestName);

TEST(RunInProcessTest, ReturnsTheFirstFailureAndReleasesWaitingPeers) {
  Clock::time_point start = Clock::now();
  Status status = RunInProcess(
      3,
      [](Comm& comm) -> Status {
        if (comm.Rank() == 1) return Internal("boom");
        return comm.Barrier();  // would wait a minute without the abort
      },
      TimeoutAfter(std::chrono::minutes(1)));
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(), "rank 1: boom");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(RunInProcessTest, TurnsExceptionsIntoErrors) {
  Status status = RunInProcess(2, [](Comm& comm) -> Status {
    if (comm.Rank() == 0) throw std::runtime_error("bad rank");
    return comm.Barrier();
  });
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("rank 0: uncaught exception: bad rank"));
}

TEST(RunInProcessTest, RejectsZeroRanks) {
  EXPECT_EQ(RunInProcess(0, [](Comm&) { return Status::Ok(); }).code(),
            StatusCode::kInvalidArgument);
}

TEST(InProcessCommTest, MismatchedCollectivesFailOnEveryRank) {
  Status status = RunInProcess(2, [](Comm& comm) -> Status {
    std::vector<float> data(comm.Rank() == 0 ? 4 : 5, 1.0f);
    Status result = comm.AllReduceSum(data);
    if (result.code() != StatusCode::kInvalidArgument) return Internal(result.ToString());
    if (result.message().find("rank 0 called AllReduceSum (4 floats) but rank 1 called "
                              "AllReduceSum (5 floats)") == std::string::npos) {
      return Internal(result.message());
    }
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(InProcessCommTest, CollectiveTimeoutNamesMissingRanksAndBreaksTheComm) {
  Status status = RunInProcess(
      3,
      [](Comm& comm) -> Status {
        if (comm.Rank() == 2) return Status::Ok();  // never joins
        Status result = comm.Barrier();
        if (!IsCommTimeout(result)) return Internal("expected a timeout: " + result.ToString());
        if (result.message() !=
            "Barrier on 3 ranks (waiting for ranks [2]) did not complete "
            "within 50 ms; hint: those ranks may have failed or called "
            "another collective") {
          return Internal(result.message());
        }
        std::vector<float> data(1);
        Status after = comm.AllReduceSum(data);
        if (after.message().find("unusable after an earlier Barrier that timed out") ==
            std::string::npos) {
          return Internal(after.ToString());
        }
        Status started = comm.StartAllReduceSum(data).status();
        if (started.message().find("StartAllReduceSum: the communicator is unusable") ==
            std::string::npos) {
          return Internal(started.ToString());
        }
        return Status::Ok();
      },
      TimeoutAfter(milliseconds(50)));
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// The roll call before NCCL's communicator creation: everyone present passes on every rank; a
// rank that never comes is named by rank 0 when the timeout passes, and the others go on.
TEST(RollCallTest, PassesWhenAllArriveAndNamesTheRanksThatDoNot) {
  Status all = RunInProcess(4, [](Comm& comm) { return RollCall(comm, milliseconds(5000), "x"); });
  EXPECT_TRUE(all.ok()) << all.ToString();
  Status alone = RunInProcess(1, [](Comm& comm) { return RollCall(comm, milliseconds(1), "x"); });
  EXPECT_TRUE(alone.ok()) << alone.ToString();

  Status missing = RunInProcess(4, [](Comm& comm) -> Status {
    if (comm.Rank() == 2) return Status::Ok();  // never arrives
    // Long enough for the present ranks on a loaded machine: only rank 2 may be named.
    Status result = RollCall(comm, milliseconds(1000), "NCCL communicator creation");
    if (comm.Rank() != 0) return result;
    if (result.message() !=
        "NCCL communicator creation: the roll call of 4 ranks (ranks [2] never arrived) did not "
        "complete within 1000 ms; hint: a rank that never arrives failed before it (its own error "
        "says why) or is slow to start (raise --timeout)") {
      return Internal(result.ToString());
    }
    return Status::Ok();
  });
  EXPECT_TRUE(missing.ok()) << missing.ToString();
}

TEST(InProcessCommTest, StartedAndBlockingAllReduceDoNotMatch) {
  Status status = RunInProcess(2, [](Comm& comm) -> Status {
    std::vector<float> data(4, 1.0f);
    Status result;
    if (comm.Rank() == 0) {
      result = comm.AllReduceSum(data);
    } else {
      TRIDENT_ASSIGN_OR_RETURN(Request request, comm.StartAllReduceSum(data));
      result = comm.Wait(request, milliseconds(10000));
    }
    if (result.message().find("rank 0 called AllReduceSum (4 floats) but rank 1 called "
                              "StartAllReduceSum (4 floats)") == std::string::npos) {
      return Internal(result.ToString());
    }
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(InProcessCommTest, StartedAllReduceTimeoutNamesMissingRanks) {
  Status status = RunInProcess(3, [](Comm& comm) -> Status {
    if (comm.Rank() == 2) return Status::Ok();  // never starts
    std::vector<float> data(4, 1.0f);
    TRIDENT_ASSIGN_OR_RETURN(Request request, comm.StartAllReduceSum(data));
    Status result = comm.Wait(request, milliseconds(50));
    if (result.message() !=
        "Wait: AllReduceSum of 4 floats (waiting for ranks [2]) did not complete within 50 ms; "
        "hint: a rank may have failed, or not started the same collective") {
      return Internal(result.ToString());
    }
    if (!request.active()) return Internal("the timed-out request became inactive");
    return Status::Ok();  // destroying the Comm drops the pending all-reduce
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(InProcessCommTest, SplitTimesOutWhenAListedRankNeverCalls) {
  Status status = RunInProcess(
      2,
      [](Comm& comm) -> Status {
        if (comm.Rank() == 1) return Status::Ok();
        StatusOr<std::unique_ptr<Comm>> sub = comm.Split({0, 1});
        if (!IsCommTimeout(sub.status())) return Internal(sub.status().ToString());
        if (sub.status().message().find("Split [0, 1] (waiting for ranks [1])") ==
            std::string::npos) {
          return Internal(sub.status().message());
        }
        return Status::Ok();
      },
      TimeoutAfter(milliseconds(50)));
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(InProcessWorldTest, AbortReleasesAPendingWait) {
  InProcessWorld world(2);
  std::unique_ptr<Comm> comm = world.MakeComm(0);
  Status waited = Internal("the receive was not posted");
  std::promise<void> posted;
  std::thread rank0([&] {
    std::vector<float> buffer(1);
    StatusOr<Request> recv = comm->Irecv(buffer, 1, 0);
    posted.set_value();
    if (recv.ok()) waited = comm->Wait(*recv, std::chrono::minutes(1));
  });
  // The receive is posted before the abort (on a loaded machine the thread may not have run
  // within the sleep alone), and the sleep lets the Wait start first.
  posted.get_future().wait();
  std::this_thread::sleep_for(milliseconds(20));
  world.Abort(Internal("rank 1 died"));
  rank0.join();
  EXPECT_EQ(waited.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(waited.message(), HasSubstr("aborted: rank 1 died"));
  EXPECT_FALSE(IsCommTimeout(waited));
}

// Regression: a destroyed Comm left its receives posted, and a later message was written into
// the buffer the receive had been given.
TEST(InProcessWorldTest, DestroyingACommWithdrawsItsReceives) {
  InProcessWorld world(2);
  std::unique_ptr<Comm> comm0 = world.MakeComm(0);
  std::unique_ptr<Comm> comm1 = world.MakeComm(1);
  std::vector<float> buffer = {-1.0f};
  StatusOr<Request> recv = comm0->Irecv(buffer, 1, 5);
  ASSERT_TRUE(recv.ok()) << recv.status().ToString();
  comm0.reset();
  std::vector<float> data = {2.0f};
  StatusOr<Request> send = comm1->Isend(data, 0, 5);
  ASSERT_TRUE(send.ok()) << send.status().ToString();
  EXPECT_EQ(buffer, std::vector<float>{-1.0f});
}

TEST(InProcessCommDeathTest, AbortJobEndsTheProcessWithItsExitCode) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  InProcessWorld world(2);
  std::unique_ptr<Comm> comm = world.MakeComm(1);
  EXPECT_EXIT(
      {
        std::fprintf(stderr, "rank 1: unrecoverable\n");
        comm->AbortJob(3);
      },
      ::testing::ExitedWithCode(3), "rank 1: unrecoverable");
}

TEST(InProcessWorldTest, UnreceivedMessagesAreDroppedWithTheWorld) {
  InProcessWorld world(2);
  std::unique_ptr<Comm> comm = world.MakeComm(0);
  std::vector<float> data = {1.0f, 2.0f};
  StatusOr<Request> send = comm->Isend(data, 1, 3);
  ASSERT_TRUE(send.ok()) << send.status().ToString();
  EXPECT_TRUE(comm->Wait(*send, milliseconds(0)).ok());  // buffered: complete at once
}

TEST(CommFactoryTest, RejectsUnknownKind) {
  StatusOr<std::unique_ptr<Comm>> comm = MakeWorldComm("carrier-pigeon");
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(comm.status().message(), HasSubstr("unknown comm backend 'carrier-pigeon'"));
}

TEST(CommFactoryTest, MpiIsAClearErrorInABuildWithoutIt) {
  std::vector<std::string> kinds = WorldCommKinds();
  if (std::find(kinds.begin(), kinds.end(), "mpi") != kinds.end()) {
    GTEST_SKIP() << "built with MPI: comm_mpi_test covers MakeWorldComm(\"mpi\")";
  }
  StatusOr<std::unique_ptr<Comm>> comm = MakeWorldComm("mpi");
  EXPECT_EQ(comm.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(comm.status().message(), HasSubstr("configured without MPI"));
}

}  // namespace
}  // namespace trident
