// StreamComm, NCCL's ordering on the CPU (stream_comm.h): the shared collective and Split
// scenarios pass through it, and what NCCL does differently from MPI shows: transfers match by
// order instead of tag, wait for a launch, and a launched receive holds back the sends behind it
// on its stream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/comm/inprocess_comm.h"
#include "runtime/comm/stream_comm.h"
#include "tests/runtime/comm/comm_scenarios.h"

namespace trident {
namespace {

using comm_scenarios::Scenario;
using comm_scenarios::Values;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr milliseconds kMustComplete{10000};

CommOptions Timeout(milliseconds timeout) { return CommOptions{.collective_timeout = timeout}; }

// Runs `body` on `ranks` in-process ranks, each with a StreamComm of the world.
Status RunOnStreams(int ranks, const std::function<Status(Comm&)>& body,
                    milliseconds timeout = kMustComplete) {
  return RunInProcess(
      ranks,
      [&](Comm& world) -> Status {
        TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> comm,
                                 MakeStreamComm(world, Timeout(timeout)));
        return body(*comm);
      },
      Timeout(timeout));
}

// The scenarios that hold on NCCL too: the collectives and Split, not the transfers that match
// by tag or the timeouts of MPI's progress.
std::vector<Scenario> OrderFreeScenarios() {
  const std::set<std::string> names = {"AllReduceSum",
                                       "AllGather",
                                       "ReduceScatterSum",
                                       "BroadcastFromEveryRoot",
                                       "BarrierWaitsForLateRank",
                                       "StartedAllReduceSumMatchesBlocking",
                                       "StartedReduceScatterMatchesBlocking",
                                       "StartedAllReducesCompleteInReverseOrder",
                                       "Bf16Collectives",
                                       "Bf16SumRounds",
                                       "SplitTpCpAndGradGroups",
                                       "SplitReversedOrder",
                                       "NestedSplit"};
  std::vector<Scenario> out;
  for (const Scenario& s : comm_scenarios::AllScenarios()) {
    if (names.count(s.name)) out.push_back(s);
  }
  return out;
}

class StreamScenarioTest : public ::testing::TestWithParam<std::tuple<int, Scenario>> {};

TEST_P(StreamScenarioTest, Passes) {
  const auto& [num_ranks, scenario] = GetParam();
  Status status = RunOnStreams(num_ranks, [&](Comm& comm) -> Status {
    scenario.run(comm);
    if (comm_scenarios::TakeThreadFailure()) return Internal("a check failed on this rank");
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, StreamScenarioTest,
    ::testing::Combine(::testing::Values(1, 2, 3), ::testing::ValuesIn(OrderFreeScenarios())),
    [](const ::testing::TestParamInfo<StreamScenarioTest::ParamType>& param_info) {
      return std::get<1>(param_info.param).name + "_" +
             std::to_string(std::get<0>(param_info.param)) + "ranks";
    });

// Rank 0 sends a (tag 5) then b (tag 6); rank 1 receives tag 6 first and gets a, as on NCCL.
TEST(StreamCommTest, TransfersMatchInPostingOrderNotByTag) {
  Status status = RunOnStreams(2, [](Comm& comm) -> Status {
    std::vector<float> a = Values(0, 4, 1), b = Values(0, 4, 2);
    if (comm.Rank() == 0) {
      TRIDENT_ASSIGN_OR_RETURN(Request first, comm.Isend(a, 1, 5));
      TRIDENT_ASSIGN_OR_RETURN(Request second, comm.Isend(b, 1, 6));
      TRIDENT_RETURN_IF_ERROR(comm.Wait(first, kMustComplete));
      return comm.Wait(second, kMustComplete);
    }
    std::vector<float> six(4), five(4);
    TRIDENT_ASSIGN_OR_RETURN(Request r6, comm.Irecv(six, 0, 6));
    TRIDENT_ASSIGN_OR_RETURN(Request r5, comm.Irecv(five, 0, 5));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(r5, kMustComplete));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(r6, kMustComplete));
    EXPECT_EQ(six, a);
    EXPECT_EQ(five, b);
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// An Isend that its rank never waits on or tests stays queued: the receiver times out until
// the sender's Test launches it (the ranks meet on the host world, which launches nothing).
TEST(StreamCommTest, QueuedTransfersWaitForALaunch) {
  Status status = RunInProcess(2, [](Comm& world) -> Status {
    TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> comm,
                             MakeStreamComm(world, Timeout(kMustComplete)));
    std::vector<float> out = Values(0, 3), in(3);
    if (comm->Rank() == 0) {
      TRIDENT_ASSIGN_OR_RETURN(Request send, comm->Isend(out, 1, 0));
      TRIDENT_RETURN_IF_ERROR(world.Barrier());  // rank 1 has timed out once
      TRIDENT_ASSIGN_OR_RETURN(bool done, comm->Test(send));
      (void)done;
      return comm->Wait(send, kMustComplete);
    }
    TRIDENT_ASSIGN_OR_RETURN(Request recv, comm->Irecv(in, 0, 0));
    Status early = comm->Wait(recv, milliseconds(200));
    EXPECT_EQ(early.code(), StatusCode::kDeadlineExceeded) << early.ToString();
    EXPECT_THAT(early.message(), HasSubstr("in the same order"));
    TRIDENT_RETURN_IF_ERROR(world.Barrier());
    TRIDENT_RETURN_IF_ERROR(comm->Wait(recv, kMustComplete));
    EXPECT_EQ(in, out);
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// Each rank launches its receive (Test) before posting the send its peer waits for: on one
// stream the send queues behind the receive, and neither completes (MPI would finish). Posted
// together, the same transfers form one group and complete.
TEST(StreamCommTest, ALaunchedReceiveHoldsBackTheSendsBehindIt) {
  Status status = RunOnStreams(
      2,
      [](Comm& comm) -> Status {
        const int peer = 1 - comm.Rank();
        std::vector<float> out = Values(comm.Rank(), 8), in(8);
        TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(in, peer, 0));
        TRIDENT_ASSIGN_OR_RETURN(bool done, comm.Test(recv));
        EXPECT_FALSE(done);
        TRIDENT_ASSIGN_OR_RETURN(Request send, comm.Isend(out, peer, 0));
        Status stuck = comm.Wait(send, milliseconds(300));
        EXPECT_EQ(stuck.code(), StatusCode::kDeadlineExceeded) << stuck.ToString();
        TRIDENT_RETURN_IF_ERROR(comm.Cancel(recv));  // breaks the communicator, as on NCCL
        Status after = comm.Barrier();
        EXPECT_EQ(after.code(), StatusCode::kFailedPrecondition) << after.ToString();
        EXPECT_THAT(after.message(), HasSubstr("Cancel of a launched Irecv"));
        return Status::Ok();
      },
      milliseconds(2000));
  EXPECT_TRUE(status.ok()) << status.ToString();

  status = RunOnStreams(2, [](Comm& comm) -> Status {
    const int peer = 1 - comm.Rank();
    std::vector<float> out = Values(comm.Rank(), 8), in(8);
    TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(in, peer, 0));
    TRIDENT_ASSIGN_OR_RETURN(Request send, comm.Isend(out, peer, 0));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(recv, kMustComplete));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(send, kMustComplete));
    EXPECT_EQ(in, Values(peer, 8));
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// A receive still queued is withdrawn without breaking anything.
TEST(StreamCommTest, CancelWithdrawsAQueuedReceive) {
  Status status = RunOnStreams(2, [](Comm& comm) -> Status {
    std::vector<float> never(2);
    TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(never, 1 - comm.Rank(), 3));
    TRIDENT_RETURN_IF_ERROR(comm.Cancel(recv));
    EXPECT_FALSE(recv.active());
    std::vector<float> x = {1.0f};
    TRIDENT_RETURN_IF_ERROR(comm.AllReduceSum(x));
    EXPECT_EQ(x[0], 2.0f);
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// A blocking collective runs on the stream after the transfers launched before it: one rank's
// all-reduce waits for its receive, which the peer's send (posted after its own all-reduce)
// satisfies only once both collectives are running.
TEST(StreamCommTest, CollectivesRunAfterTheLaunchedTransfers) {
  Status status = RunOnStreams(2, [](Comm& comm) -> Status {
    std::vector<float> out = Values(0, 4), in(4), x = {1.0f};
    if (comm.Rank() == 0) {
      TRIDENT_ASSIGN_OR_RETURN(Request send, comm.Isend(out, 1, 0));
      TRIDENT_RETURN_IF_ERROR(comm.AllReduceSum(x));  // launches the send first
      TRIDENT_RETURN_IF_ERROR(comm.Wait(send, kMustComplete));
    } else {
      TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(in, 0, 0));
      TRIDENT_RETURN_IF_ERROR(comm.AllReduceSum(x));
      TRIDENT_RETURN_IF_ERROR(comm.Wait(recv, kMustComplete));
      EXPECT_EQ(in, out);
    }
    EXPECT_EQ(x[0], 2.0f);
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

}  // namespace
}  // namespace trident
