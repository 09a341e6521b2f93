// RequestTable (runtime/comm/request_table.h) with a fake backend whose polls follow a script:
// Wait, Test and Cancel over pending, completed, failed and withdrawn requests, the timeout
// messages, requests of another communicator and requests that already finished.
#include "runtime/comm/request_table.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/comm_checks.h"
#include "runtime/comm/inprocess_comm.h"

namespace trident {
namespace {

// A buffer of n floats, as a request records it (its size and element type).
Wire Floats(size_t n) { return Wire(nullptr, n, WireType::kFp32); }

using std::chrono::milliseconds;

// A fake request: the results its polls return, in order (Pending once they run out).
struct ScriptedOp {
  std::deque<Progress> polls;
  Status withdrawn = Status::Ok();  // what Withdraw returns
};
using Table = RequestTable<ScriptedOp>;

class ScriptedBackend final : public Table::Backend {
 public:
  Progress Poll(Table::Pending& pending, std::optional<milliseconds> timeout) override {
    timeouts.push_back(timeout);
    if (pending.op.polls.empty()) return Progress::Pending();
    Progress next = pending.op.polls.front();
    pending.op.polls.pop_front();
    return next;
  }
  Status Withdraw(Table::Pending& pending) override {
    ++withdrawals;
    return pending.op.withdrawn;
  }

  std::vector<std::optional<milliseconds>> timeouts;  // one per poll
  int withdrawals = 0;
};

class RequestTableTest : public ::testing::Test {
 protected:
  // Two communicators only to have two owners; the table never calls them.
  InProcessWorld world_{1};
  std::unique_ptr<Comm> owner_ = world_.MakeComm(0);
  std::unique_ptr<Comm> other_owner_ = world_.MakeComm(0);
  ScriptedBackend backend_;
  Table table_{owner_.get(), &backend_};
};

TEST_F(RequestTableTest, InactiveRequestsAreDoneWithoutPolling) {
  Request request;
  EXPECT_TRUE(table_.Wait(request, milliseconds(10)).ok());
  StatusOr<bool> tested = table_.Test(request);
  ASSERT_TRUE(tested.ok());
  EXPECT_TRUE(*tested);
  EXPECT_TRUE(table_.Cancel(request).ok());
  EXPECT_TRUE(backend_.timeouts.empty());
  EXPECT_EQ(backend_.withdrawals, 0);
}

TEST_F(RequestTableTest, TestIsFalseUntilThePollFindsItDone) {
  Request request = table_.Add(RequestInfo::Recv(1, 7, Floats(4)),
                               {.polls = {Progress::Pending(), Progress::Done(Status::Ok())}});
  ASSERT_TRUE(request.active());
  StatusOr<bool> first = table_.Test(request);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(*first);
  EXPECT_TRUE(request.active());
  StatusOr<bool> second = table_.Test(request);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(*second);
  EXPECT_FALSE(request.active());
  EXPECT_TRUE(table_.empty());
  // Test polls without a timeout: one look.
  EXPECT_EQ(backend_.timeouts,
            (std::vector<std::optional<milliseconds>>{std::nullopt, std::nullopt}));
}

TEST_F(RequestTableTest, WaitReturnsTheStatusTheRequestFinishedWith) {
  Request request = table_.Add(RequestInfo::Recv(1, 7, Floats(4)),
                               {.polls = {Progress::Done(InvalidArgument("4 floats, got 5"))}});
  Status status = table_.Wait(request, milliseconds(30));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "4 floats, got 5");
  EXPECT_FALSE(request.active());
  EXPECT_TRUE(table_.empty());
  ASSERT_EQ(backend_.timeouts.size(), 1u);
  EXPECT_EQ(backend_.timeouts[0], milliseconds(30));
}

TEST_F(RequestTableTest, FinishingTwiceIsOkAndPollsOnce) {
  Request request = table_.Add(RequestInfo::Send(2, 3, Floats(8)), {.polls = {Progress::Done({})}});
  EXPECT_TRUE(table_.Wait(request, milliseconds(10)).ok());
  EXPECT_TRUE(table_.Wait(request, milliseconds(10)).ok());
  StatusOr<bool> tested = table_.Test(request);
  ASSERT_TRUE(tested.ok());
  EXPECT_TRUE(*tested);
  EXPECT_EQ(backend_.timeouts.size(), 1u);
}

TEST_F(RequestTableTest, TestOfAFailedRequestReturnsItsErrorAndDeactivatesIt) {
  Request request = table_.Add(RequestInfo::Send(2, 3, Floats(8)),
                               {.polls = {Progress::Done(Internal("MPI_Test"))}});
  StatusOr<bool> tested = table_.Test(request);
  EXPECT_FALSE(tested.ok());
  EXPECT_EQ(tested.status().message(), "MPI_Test");
  EXPECT_FALSE(request.active());
}

// A Wait whose poll finds the request pending: what the timeout message says.
struct TimeoutCase {
  RequestInfo info;
  std::string waiting_for;  // the backend's addition
  std::string transfer_hint;
  std::string message;
};

TEST_F(RequestTableTest, WaitPastItsTimeoutNamesTheRequestAndKeepsItActive) {
  const std::string kTransfer(comm_internal::kTransferHint);
  const std::string kCollective(comm_internal::kStartedCollectiveHint);
  const std::vector<TimeoutCase> cases = {
      {RequestInfo::Recv(1, 99, Floats(4)), "", kTransfer,
       "Wait: Irecv from rank 1 (tag 99, 4 floats) did not complete within 50 ms; hint: " +
           kTransfer},
      {RequestInfo::Send(0, 1, Floats(2)), "", "match by order",
       "Wait: Isend to rank 0 (tag 1, 2 floats) did not complete within 50 ms; hint: match by "
       "order"},
      {RequestInfo::Collective("AllReduceSum", Floats(1024)), " (waiting for ranks [2])", kTransfer,
       "Wait: AllReduceSum of 1024 floats (waiting for ranks [2]) did not complete within 50 ms; "
       "hint: " +
           kCollective},
  };
  for (const TimeoutCase& c : cases) {
    SCOPED_TRACE(c.message);
    Table table(owner_.get(), &backend_, c.transfer_hint);
    Request request = table.Add(
        c.info, {.polls = {Progress::Pending(c.waiting_for), Progress::Done(Status::Ok())}});
    Status status = table.Wait(request, milliseconds(50));
    EXPECT_TRUE(IsCommTimeout(status));
    EXPECT_EQ(status.message(), c.message);
    EXPECT_TRUE(request.active());
    EXPECT_TRUE(table.Wait(request, milliseconds(50)).ok());
    EXPECT_FALSE(request.active());
  }
}

TEST_F(RequestTableTest, AFailedPollLeavesTheRequestActive) {
  Request request = table_.Add(RequestInfo::Recv(1, 7, Floats(4)),
                               {.polls = {Progress::PollFailed(FailedPrecondition("aborted")),
                                          Progress::PollFailed(FailedPrecondition("aborted")),
                                          Progress::Done(Status::Ok())}});
  StatusOr<bool> tested = table_.Test(request);
  EXPECT_EQ(tested.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(request.active());
  EXPECT_EQ(table_.Wait(request, milliseconds(10)).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(request.active());
  EXPECT_TRUE(table_.Wait(request, milliseconds(10)).ok());
  EXPECT_FALSE(request.active());
}

TEST_F(RequestTableTest, CancelRefusesSendsAndCollectivesAndKeepsThemActive) {
  Request send = table_.Add(RequestInfo::Send(2, 3, Floats(8)), {});
  Request started = table_.Add(RequestInfo::Collective("AllReduceSum", Floats(16)), {});
  Status refused_send = table_.Cancel(send);
  EXPECT_EQ(refused_send.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused_send.message(),
            comm_internal::CancelSendError("Isend to rank 2 (tag 3, 8 floats)").message());
  Status refused_collective = table_.Cancel(started);
  EXPECT_EQ(refused_collective.message(),
            comm_internal::CancelCollectiveError("AllReduceSum of 16 floats").message());
  EXPECT_TRUE(send.active());
  EXPECT_TRUE(started.active());
  EXPECT_EQ(backend_.withdrawals, 0);
}

TEST_F(RequestTableTest, CancelWithdrawsAReceiveAndReturnsItsStatus) {
  Request withdrawn = table_.Add(RequestInfo::Recv(1, 7, Floats(4)), {});
  Request matched = table_.Add(RequestInfo::Recv(1, 8, Floats(4)),
                               {.polls = {}, .withdrawn = InvalidArgument("got 5 floats")});
  EXPECT_TRUE(table_.Cancel(withdrawn).ok());
  EXPECT_FALSE(withdrawn.active());
  EXPECT_EQ(table_.Cancel(matched).message(), "got 5 floats");
  EXPECT_FALSE(matched.active());
  EXPECT_EQ(backend_.withdrawals, 2);
  EXPECT_TRUE(backend_.timeouts.empty());
  EXPECT_TRUE(table_.empty());
}

TEST_F(RequestTableTest, RequestsOfAnotherCommunicatorAreUnknown) {
  Table other(other_owner_.get(), &backend_);
  Request foreign = other.Add(RequestInfo::Recv(1, 7, Floats(4)), {});
  table_.Add(RequestInfo::Recv(1, 7, Floats(4)), {});  // same id in this table
  const std::string unknown =
      ": the request was not made by this communicator or already completed";
  EXPECT_EQ(table_.Wait(foreign, milliseconds(1)).message(), "Wait" + unknown);
  EXPECT_EQ(table_.Test(foreign).status().message(), "Test" + unknown);
  EXPECT_EQ(table_.Cancel(foreign).message(), "Cancel" + unknown);
  EXPECT_EQ(table_.Find(foreign), nullptr);
  EXPECT_TRUE(foreign.active());
  EXPECT_TRUE(backend_.timeouts.empty());
  EXPECT_EQ(backend_.withdrawals, 0);
}

TEST_F(RequestTableTest, RequestsFinishInAnyOrder) {
  std::vector<Request> requests;
  for (int tag = 0; tag < 3; ++tag) {
    requests.push_back(table_.Add(RequestInfo::Recv(1, tag, Floats(4)), {}));
  }
  table_.Find(requests[1])->op.polls.push_back(Progress::Done(Status::Ok()));
  EXPECT_TRUE(table_.Wait(requests[1], milliseconds(1)).ok());
  EXPECT_EQ(table_.Find(requests[1]), nullptr);
  std::vector<int> tags;
  table_.ForEach([&tags](Table::Pending& pending) { tags.push_back(pending.info.tag); });
  EXPECT_EQ(tags, (std::vector<int>{0, 2}));
  EXPECT_TRUE(requests[0].active());
  EXPECT_TRUE(requests[2].active());
}

TEST(PollUntilTest, LooksOnceWhenTheDeadlineHasPassed) {
  int looks = 0;
  StatusOr<bool> done = comm_internal::PollUntil(comm_internal::PollDeadline(std::nullopt), [&] {
    ++looks;
    return StatusOr<bool>(false);
  });
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*done);
  EXPECT_EQ(looks, 1);
}

TEST(PollUntilTest, StopsAtTheFirstDoneOrError) {
  int looks = 0;
  auto deadline = comm_internal::PollDeadline(milliseconds(10'000));
  StatusOr<bool> done =
      comm_internal::PollUntil(deadline, [&] { return StatusOr<bool>(++looks == 3); });
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(looks, 3);
  StatusOr<bool> failed =
      comm_internal::PollUntil(deadline, [] { return StatusOr<bool>(Internal("MPI_Test")); });
  EXPECT_EQ(failed.status().message(), "MPI_Test");
}

TEST(PollUntilTest, GivesUpAfterTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<bool> done = comm_internal::PollUntil(comm_internal::PollDeadline(milliseconds(20)),
                                                 [] { return StatusOr<bool>(false); });
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*done);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(20));
}

TEST(PollOpTest, NamesTheCall) {
  EXPECT_EQ(comm_internal::PollOp(std::nullopt), "Test");
  EXPECT_EQ(comm_internal::PollOp(milliseconds(0)), "Wait");
}

}  // namespace
}  // namespace trident
