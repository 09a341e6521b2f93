// Started (non-blocking) collective scenarios: StartAllReduceSum completed through Wait and
// Test, several at once, alongside point-to-point traffic and blocking collectives, and with a
// rank that starts late. Results compared exactly with sums of exactly representable inputs.
#include <gmock/gmock.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/comm/scenario_functions.h"

namespace trident::comm_scenarios {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Tags of the scenarios' own messages.
constexpr int kRelayTag = 30;
constexpr int kLateTag = 31;
constexpr int kOverlapTag = 32;

std::vector<uint32_t> Bits(const std::vector<float>& values) {
  std::vector<uint32_t> bits;
  for (float v : values) bits.push_back(std::bit_cast<uint32_t>(v));
  return bits;
}

void ExpectSum(const Comm& comm, const std::vector<float>& data, int salt) {
  EXPECT_TRUE(data == SumOfValues(AllRanks(comm), static_cast<int>(data.size()), salt))
      << data.size() << " floats, salt " << salt;
}

// The last rank receives a token from every other rank.
void AwaitOtherRanks(Comm& comm) {
  const int last = comm.Size() - 1;
  std::vector<std::vector<float>> tokens(last, std::vector<float>(1));
  std::vector<Request> recvs;
  for (int r = 0; r < last; ++r) {
    COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(tokens[r], r, kLateTag));
    recvs.push_back(std::move(recv));
  }
  for (Request& recv : recvs) COMM_ASSERT_OK(comm.Wait(recv, kMustComplete));
}

// Every rank but the last starts an all-reduce of `data` into `request` and runs
// `check_pending` on it (it cannot complete yet: the last rank has not started), then sends the
// last rank a token; the last rank starts only once it has every token.
void StartLastRankLate(Comm& comm, std::vector<float>& data, Request& request,
                       const std::function<void(Request&)>& check_pending) {
  const int last = comm.Size() - 1;
  if (comm.Rank() == last) {
    AwaitOtherRanks(comm);
    COMM_ASSERT_OK_AND_ASSIGN(request, comm.StartAllReduceSum(data));
    return;
  }
  COMM_ASSERT_OK_AND_ASSIGN(request, comm.StartAllReduceSum(data));
  check_pending(request);
  std::vector<float> token = {static_cast<float>(comm.Rank())};
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(token, last, kLateTag));
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
}

}  // namespace

void StartedAllReduceSumMatchesBlocking(Comm& comm) {
  // The same counts as the blocking scenario; the started sum has the blocking one's bits.
  for (int count : {37, 0, 1 << 16}) {
    std::vector<float> started = Values(comm.Rank(), count, count);
    std::vector<float> blocking = started;
    COMM_ASSERT_OK_AND_ASSIGN(Request request, comm.StartAllReduceSum(started));
    EXPECT_TRUE(request.active());
    COMM_ASSERT_OK(comm.Wait(request, kMustComplete));
    EXPECT_FALSE(request.active());
    COMM_ASSERT_OK(comm.AllReduceSum(blocking));
    ExpectSum(comm, started, count);
    EXPECT_TRUE(Bits(started) == Bits(blocking)) << count << " floats";
  }
}

void StartedReduceScatterMatchesBlocking(Comm& comm) {
  // Beside a started all-reduce, completed in reverse order; the block has the blocking bits.
  for (int block : {5, 0, 1 << 14}) {
    const int total = block * comm.Size();
    std::vector<float> send = Values(comm.Rank(), total, block + 3);
    std::vector<float> started(block, -1.0f), blocking(block, -2.0f);
    std::vector<float> beside = Values(comm.Rank(), 4, 7);
    COMM_ASSERT_OK_AND_ASSIGN(Request scatter, comm.StartReduceScatterSum(send, started));
    COMM_ASSERT_OK_AND_ASSIGN(Request reduce, comm.StartAllReduceSum(beside));
    COMM_ASSERT_OK(comm.Wait(reduce, kMustComplete));
    COMM_ASSERT_OK(comm.Wait(scatter, kMustComplete));
    EXPECT_FALSE(scatter.active());
    COMM_ASSERT_OK(comm.ReduceScatterSum(send, blocking));
    std::vector<float> sum = SumOfValues(AllRanks(comm), total, block + 3);
    std::vector<float> mine(sum.begin() + block * comm.Rank(),
                            sum.begin() + block * (comm.Rank() + 1));
    EXPECT_EQ(started, mine) << block << " floats a block";
    EXPECT_TRUE(Bits(started) == Bits(blocking)) << block << " floats a block";
    ExpectSum(comm, beside, 7);
  }
}

void StartedReduceScatterChecksSizes(Comm& comm) {
  std::vector<float> send(3 * comm.Size() + 1), recv(3);
  StatusOr<Request> request = comm.StartReduceScatterSum(send, recv);
  EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(request.status().message(), HasSubstr("send holds"));
}

void StartedAllReducesCompleteInReverseOrder(Comm& comm) {
  // Started, blocking, started: one order of collective calls; the started ones are then
  // completed last first.
  std::vector<float> first = Values(comm.Rank(), 7, 1);
  std::vector<float> middle = Values(comm.Rank(), 5, 2);
  std::vector<float> second = Values(comm.Rank(), 300, 3);
  COMM_ASSERT_OK_AND_ASSIGN(Request first_request, comm.StartAllReduceSum(first));
  COMM_ASSERT_OK(comm.AllReduceSum(middle));
  COMM_ASSERT_OK_AND_ASSIGN(Request second_request, comm.StartAllReduceSum(second));
  COMM_ASSERT_OK(comm.Wait(second_request, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(first_request, kMustComplete));
  ExpectSum(comm, first, 1);
  ExpectSum(comm, middle, 2);
  ExpectSum(comm, second, 3);
}

void StartDoesNotWaitForPeers(Comm& comm) {
  // A token relayed 0 -> 1 -> ... : rank r starts only after rank r - 1 has started and passed
  // the token on, so if Start waited for the other ranks, rank 0 would wait forever.
  std::vector<float> data = Values(comm.Rank(), 9, 60);
  std::vector<float> token = {0.0f};
  if (comm.Rank() > 0) {
    COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(token, comm.Rank() - 1, kRelayTag));
    COMM_ASSERT_OK(comm.Wait(recv, kMustComplete));
  }
  COMM_ASSERT_OK_AND_ASSIGN(Request request, comm.StartAllReduceSum(data));
  if (comm.Rank() < comm.Size() - 1) {
    COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(token, comm.Rank() + 1, kRelayTag));
    COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
  }
  COMM_ASSERT_OK(comm.Wait(request, kMustComplete));
  ExpectSum(comm, data, 60);
}

void StartedAllReduceOverlapsP2p(Comm& comm) {
  // A 1 MiB ring exchange (past MPI's eager limit) while the all-reduce is outstanding.
  constexpr int kCount = 1 << 18;
  std::vector<float> data = Values(comm.Rank(), 1 << 16, 70);
  COMM_ASSERT_OK_AND_ASSIGN(Request reduce, comm.StartAllReduceSum(data));
  std::vector<float> out = Values(comm.Rank(), kCount, 80);
  std::vector<float> in(kCount);
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(in, Prev(comm), kOverlapTag));
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(out, Next(comm), kOverlapTag));
  COMM_ASSERT_OK(comm.Wait(recv, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
  EXPECT_TRUE(in == Values(Prev(comm), kCount, 80)) << "ring message differs";
  COMM_ASSERT_OK(comm.Wait(reduce, kMustComplete));
  ExpectSum(comm, data, 70);
}

void TestPollsStartedAllReduce(Comm& comm) {
  std::vector<float> data = Values(comm.Rank(), 6, 50);
  Request request;
  StartLastRankLate(comm, data, request, [&](Request& pending) {
    COMM_ASSERT_OK_AND_ASSIGN(bool done, comm.Test(pending));
    EXPECT_FALSE(done);
    EXPECT_TRUE(pending.active());
  });
  Clock::time_point deadline = Clock::now() + kMustComplete;
  bool done = false;
  while (!done) {
    ASSERT_LT(Clock::now(), deadline) << "Test never reported the all-reduce complete";
    std::this_thread::yield();
    COMM_ASSERT_OK_AND_ASSIGN(done, comm.Test(request));
  }
  EXPECT_FALSE(request.active());
  ExpectSum(comm, data, 50);
}

void StartedAllReduceWaitTimesOut(Comm& comm) {
  // A Wait while the last rank has not started times out, names the all-reduce, and leaves the
  // request active and the communicator usable (the token after it is a message).
  std::vector<float> data = Values(comm.Rank(), 5, 40);
  Request request;
  StartLastRankLate(comm, data, request, [&](Request& pending) {
    Status status = comm.Wait(pending, std::chrono::milliseconds(50));
    EXPECT_TRUE(IsCommTimeout(status)) << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr("Wait: AllReduceSum of 5 floats"));
    EXPECT_THAT(status.message(), HasSubstr("within 50 ms"));
    EXPECT_TRUE(pending.active());
  });
  COMM_ASSERT_OK(comm.Wait(request, kMustComplete));
  ExpectSum(comm, data, 40);
}

void CancelRefusesStartedAllReduce(Comm& comm) {
  std::vector<float> data = Values(comm.Rank(), 3, 90);
  COMM_ASSERT_OK_AND_ASSIGN(Request request, comm.StartAllReduceSum(data));
  Status status = comm.Cancel(request);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("Cancel: AllReduceSum of 3 floats is a started collective"));
  EXPECT_TRUE(request.active());
  COMM_ASSERT_OK(comm.Wait(request, kMustComplete));
  ExpectSum(comm, data, 90);
}

}  // namespace trident::comm_scenarios
