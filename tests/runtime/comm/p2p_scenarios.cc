// Point-to-point scenarios: every rank sends to the next rank and receives from the previous
// one (a ring), so each rank is both a sender and a receiver. Sizes >= 1 (alone, a rank sends
// to itself).
#include <gmock/gmock.h>

#include <chrono>
#include <thread>

#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/comm/scenario_functions.h"

namespace trident::comm_scenarios {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

void SendRecvOutOfOrderTags(Comm& comm) {
  // Sent with tags 1, 2, 3; received posted as 3, 1, 2 and completed as 2, 3, 1.
  std::vector<std::vector<float>> out(4);
  std::vector<Request> sends;
  for (int tag = 1; tag <= 3; ++tag) {
    out[tag] = Values(comm.Rank(), 4 + tag, 10 * tag);
    COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(out[tag], Next(comm), tag));
    sends.push_back(std::move(send));
  }
  std::vector<std::vector<float>> in(4);
  std::vector<Request> recvs(4);
  for (int tag : {3, 1, 2}) {
    in[tag].assign(4 + tag, 0.0f);
    COMM_ASSERT_OK_AND_ASSIGN(recvs[tag], comm.Irecv(in[tag], Prev(comm), tag));
  }
  for (int tag : {2, 3, 1}) {
    COMM_ASSERT_OK(comm.Wait(recvs[tag], kMustComplete));
    EXPECT_FALSE(recvs[tag].active());
    EXPECT_EQ(in[tag], Values(Prev(comm), 4 + tag, 10 * tag)) << "tag " << tag;
  }
  for (Request& send : sends) COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
}

void SameTagKeepsOrder(Comm& comm) {
  // Receives posted before the sends; three messages with one tag arrive in the order sent.
  constexpr int kMessages = 3;
  std::vector<std::vector<float>> in(kMessages, std::vector<float>(6));
  std::vector<Request> recvs;
  for (auto& buffer : in) {
    COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(buffer, Prev(comm), 7));
    recvs.push_back(std::move(recv));
  }
  std::vector<std::vector<float>> out;
  for (int m = 0; m < kMessages; ++m) out.push_back(Values(comm.Rank(), 6, 100 * m));
  std::vector<Request> sends;
  for (const auto& buffer : out) {
    COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(buffer, Next(comm), 7));
    sends.push_back(std::move(send));
  }
  for (int m = kMessages - 1; m >= 0; --m) COMM_ASSERT_OK(comm.Wait(recvs[m], kMustComplete));
  for (int m = 0; m < kMessages; ++m) {
    EXPECT_EQ(in[m], Values(Prev(comm), 6, 100 * m)) << "message " << m;
  }
  for (Request& send : sends) COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
}

void LargeMessage(Comm& comm) {
  // 4 MiB: beyond any eager limit, so MPI uses its rendezvous protocol.
  constexpr int kCount = 1 << 20;
  std::vector<float> out = Values(comm.Rank(), kCount);
  std::vector<float> in(kCount);
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(in, Prev(comm), 12));
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(out, Next(comm), 12));
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(recv, kMustComplete));
  EXPECT_TRUE(in == Values(Prev(comm), kCount)) << "4 MiB message differs";
}

void WaitTimesOut(Comm& comm) {
  // Nobody sends tag 99: the wait must give up after 50 ms with a timeout that says what it
  // waited for, and leave the request active for Cancel.
  std::vector<float> buffer(4);
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(buffer, Prev(comm), 99));
  Clock::time_point start = Clock::now();
  Status status = comm.Wait(recv, std::chrono::milliseconds(50));
  Clock::duration waited = Clock::now() - start;
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_TRUE(IsCommTimeout(status)) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("Irecv from rank " + std::to_string(Prev(comm)) + " (tag 99, 4 floats)"));
  EXPECT_THAT(status.message(), HasSubstr("within 50 ms"));
  EXPECT_GE(waited, std::chrono::milliseconds(50));
  EXPECT_LT(waited, std::chrono::milliseconds(500));
  EXPECT_TRUE(recv.active());
  COMM_ASSERT_OK(comm.Cancel(recv));
  EXPECT_FALSE(recv.active());
  COMM_ASSERT_OK(comm.Barrier());
}

void TestPollsUntilComplete(Comm& comm) {
  std::vector<float> in(3);
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(in, Prev(comm), 11));
  // The previous rank sends only after the barrier, which this rank has not entered yet.
  COMM_ASSERT_OK_AND_ASSIGN(bool done, comm.Test(recv));
  EXPECT_FALSE(done);
  EXPECT_TRUE(recv.active());
  COMM_ASSERT_OK(comm.Barrier());
  std::vector<float> out = Values(comm.Rank(), 3, 11);
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(out, Next(comm), 11));
  Clock::time_point deadline = Clock::now() + kMustComplete;
  while (!done) {
    ASSERT_LT(Clock::now(), deadline) << "Test never reported the receive complete";
    std::this_thread::yield();
    COMM_ASSERT_OK_AND_ASSIGN(done, comm.Test(recv));
  }
  EXPECT_FALSE(recv.active());
  EXPECT_EQ(in, Values(Prev(comm), 3, 11));
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
}

void MessageSizeMismatch(Comm& comm) {
  // A message shorter than the buffer (tag 4), then one longer (tag 6): both are errors.
  std::vector<float> short_message = Values(comm.Rank(), 3);
  std::vector<float> long_message = Values(comm.Rank(), 6);
  COMM_ASSERT_OK_AND_ASSIGN(Request send_short, comm.Isend(short_message, Next(comm), 4));
  COMM_ASSERT_OK_AND_ASSIGN(Request send_long, comm.Isend(long_message, Next(comm), 6));
  std::vector<float> in(5);
  std::string from = "Irecv from rank " + std::to_string(Prev(comm));
  for (int tag : {4, 6}) {
    COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(in, Prev(comm), tag));
    Status status = comm.Wait(recv, kMustComplete);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr(from + " (tag " + std::to_string(tag) + ", 5 floats)"));
    EXPECT_THAT(status.message(), HasSubstr(tag == 4 ? "holds 3 floats" : "floats; hint"));
    EXPECT_FALSE(recv.active());
  }
  COMM_ASSERT_OK(comm.Wait(send_short, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(send_long, kMustComplete));
  COMM_ASSERT_OK(comm.Barrier());
}

void RejectsBadArguments(Comm& comm) {
  // Checked before anything is sent, identically in every backend.
  std::vector<float> buffer(4);
  auto code = [](const auto& result) { return result.status().code(); };
  EXPECT_EQ(code(comm.Isend(buffer, comm.Size(), 0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(comm.Irecv(buffer, -1, 0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(comm.Isend(buffer, Next(comm), -1)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(comm.Irecv(buffer, Prev(comm), kMaxTag + 1)), StatusCode::kInvalidArgument);
  EXPECT_THAT(comm.Isend(buffer, comm.Size(), 0).status().message(),
              HasSubstr("Isend: dest " + std::to_string(comm.Size()) +
                        " is not a rank of this communicator"));
  std::vector<float> gathered(4 * comm.Size() + 1);
  EXPECT_EQ(comm.AllGather(buffer, gathered).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.ReduceScatterSum(gathered, buffer).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.Broadcast(buffer, comm.Size()).code(), StatusCode::kInvalidArgument);
  std::span<float> whole(gathered);
  EXPECT_THAT(comm.AllGather(whole.first(1), whole.first(comm.Size())).message(),
              HasSubstr("overlap"));

  Request inactive;
  COMM_ASSERT_OK(comm.Wait(inactive, kMustComplete));
  COMM_ASSERT_OK(comm.Cancel(inactive));
  // A send cannot be cancelled; it stays active and completes normally.
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(buffer, Next(comm), 2));
  EXPECT_EQ(comm.Cancel(send).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(send.active());
  std::vector<float> in(4);
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(in, Prev(comm), 2));
  COMM_ASSERT_OK(comm.Wait(recv, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
}

}  // namespace trident::comm_scenarios
