#include "runtime/comm/inprocess_comm.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "core/check.h"
#include "runtime/comm/comm_checks.h"
#include "runtime/comm/inprocess_world.h"
#include "runtime/comm/request_table.h"

namespace trident {
namespace {

using inprocess_internal::Clock;
using inprocess_internal::CollectiveKind;
using inprocess_internal::Contribution;
using inprocess_internal::Message;
using inprocess_internal::PostedRecv;
using inprocess_internal::Round;
using inprocess_internal::RoundKey;
using inprocess_internal::ToFloats;
using inprocess_internal::Transfer;
using inprocess_internal::WaitLocked;
using inprocess_internal::WaitResult;
using inprocess_internal::WorldState;

// A pending request's record: an Isend or Irecv's transfer, or a started collective's round
// (it completes with the round, and its result goes to `out`).
struct InProcessOp {
  std::shared_ptr<Transfer> transfer = nullptr;
  RoundKey round = {};
  Wire out = Wire();
  size_t offset = 0;  // of `out` in the round's result
};
using Requests = RequestTable<InProcessOp>;
using Pending = Requests::Pending;

class InProcessComm final : public Comm, private Requests::Backend {
 public:
  InProcessComm(std::shared_ptr<WorldState> world, int context, std::vector<int> world_ranks,
                int rank, const CommOptions& options)
      : world_(std::move(world)),
        context_(context),
        world_ranks_(std::move(world_ranks)),
        rank_(rank),
        options_(options) {}
  ~InProcessComm() override;

  int Rank() const override { return rank_; }
  int Size() const override { return static_cast<int>(world_ranks_.size()); }

  StatusOr<Request> Isend(Wire data, int dest, int tag) override;
  StatusOr<Request> Irecv(Wire data, int source, int tag) override;
  Status Wait(Request& request, std::chrono::milliseconds timeout) override {
    return requests_.Wait(request, timeout);
  }
  StatusOr<bool> Test(Request& request) override { return requests_.Test(request); }
  Status Cancel(Request& request) override { return requests_.Cancel(request); }

  Status AllReduceSum(Wire data) override;
  Status AllGather(Wire send, Wire recv) override;
  Status ReduceScatterSum(Wire send, Wire recv) override;
  Status Broadcast(Wire data, int root) override;
  Status Barrier() override;
  StatusOr<Request> StartAllReduceSum(Wire data) override;
  StatusOr<Request> StartReduceScatterSum(Wire send, Wire recv) override;
  StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) override;
  [[noreturn]] void AbortJob(int exit_code) override;

 private:
  // Requests::Backend: waits on the world's condition variable; a completed collective leaves
  // its round there. An aborted world fails the poll and leaves the request active.
  Progress Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) override;
  Status Withdraw(Pending& pending) override;

  Status CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                       const Wire& data) const;
  Status CheckUsable(std::string_view op) const;
  // REQUIRES: world_->mu held.
  Status AbortedError(std::string_view op) const;
  // Whether `p` has completed. REQUIRES: world_->mu held.
  bool ReadyLocked(const Pending& p) const;
  // The status of completed `p` (a started collective leaves its round, with the result in
  // its buffer). REQUIRES: world_->mu held.
  Status CompleteLocked(Pending& p);
  RoundKey NextRoundKey() { return RoundKey(context_, collective_seq_++); }
  // Adds this rank's part to the next round, waits for it and copies out.count elements of the
  // result, starting at `offset`.
  Status RunCollective(std::string_view op, Contribution mine, const Wire& out, size_t offset);
  Status CollectiveTimeout(std::string_view op, const Round& round);
  StatusOr<int> MeetForSplit(const std::vector<int>& ranks);

  std::shared_ptr<WorldState> world_;
  int context_;
  std::vector<int> world_ranks_;  // world rank of each rank of this communicator
  int rank_;
  CommOptions options_;
  Requests requests_{this, this};
  int64_t collective_seq_ = 0;
  std::map<std::vector<int>, int> split_counts_;
  std::string broken_;  // what timed out; empty while usable
};

Status InProcessComm::CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                                    const Wire& data) const {
  TRIDENT_RETURN_IF_ERROR(CheckUsable(op));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer(op, role, peer, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckTag(op, tag));
  return comm_internal::CheckCount(op, data);
}

Status InProcessComm::CheckUsable(std::string_view op) const {
  if (broken_.empty()) return Status::Ok();
  return comm_internal::BrokenCommError(op, broken_);
}

Status InProcessComm::AbortedError(std::string_view op) const {
  return FailedPrecondition(
      std::string(op) + ": the in-process world was aborted: " + world_->abort_status.message());
}

InProcessComm::~InProcessComm() {
  std::lock_guard<std::mutex> lock(world_->mu);
  requests_.ForEach([this](Pending& p) {
    if (p.info.kind == RequestInfo::Kind::kCollective) {
      (void)LeaveRoundLocked(*world_, p.op.round, Size(), Wire(), 0);  // drops the result
    } else if (p.info.kind == RequestInfo::Kind::kRecv) {
      WithdrawLocked(*world_, world_ranks_[rank_], p.op.transfer.get());
    }
  });
}

bool InProcessComm::ReadyLocked(const Pending& p) const {
  if (p.info.kind == RequestInfo::Kind::kCollective) return world_->rounds.at(p.op.round).done;
  return p.op.transfer->done;
}

Status InProcessComm::CompleteLocked(Pending& p) {
  if (p.info.kind != RequestInfo::Kind::kCollective) return p.op.transfer->status;
  return LeaveRoundLocked(*world_, p.op.round, Size(), p.op.out, p.op.offset);
}

Progress InProcessComm::Poll(Pending& p, std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock<std::mutex> lock(world_->mu);
  WaitResult result = WaitLocked(*world_, lock, comm_internal::PollDeadline(timeout),
                                 [&] { return ReadyLocked(p); });
  if (result == WaitResult::kAborted) {
    return Progress::PollFailed(AbortedError(comm_internal::PollOp(timeout)));
  }
  if (result == WaitResult::kReady) return Progress::Done(CompleteLocked(p));
  if (p.info.kind != RequestInfo::Kind::kCollective) return Progress::Pending();
  std::vector<int> missing = MissingRanks(world_->rounds.at(p.op.round));
  return Progress::Pending(" (waiting for ranks " + comm_internal::RankList(missing) + ")");
}

Status InProcessComm::Withdraw(Pending& p) {
  std::lock_guard<std::mutex> lock(world_->mu);
  if (!p.op.transfer->done) {
    WithdrawLocked(*world_, world_ranks_[rank_], p.op.transfer.get());
    p.op.transfer->done = true;
  }
  return p.op.transfer->status;
}

StatusOr<Request> InProcessComm::Isend(Wire data, int dest, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Isend", "dest", dest, tag, data));
  auto transfer = std::make_shared<Transfer>();
  transfer->done = true;  // buffered
  {
    std::lock_guard<std::mutex> lock(world_->mu);
    if (!world_->abort_status.ok()) return AbortedError("Isend");
    Message message{context_, rank_, tag, data.type, ToFloats(data)};
    DeliverLocked(*world_, world_ranks_[dest], std::move(message));
  }
  world_->cv.notify_all();
  return requests_.Add(RequestInfo::Send(dest, tag, data), {.transfer = std::move(transfer)});
}

StatusOr<Request> InProcessComm::Irecv(Wire data, int source, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Irecv", "source", source, tag, data));
  auto transfer = std::make_shared<Transfer>();
  {
    std::lock_guard<std::mutex> lock(world_->mu);
    if (!world_->abort_status.ok()) return AbortedError("Irecv");
    PostedRecv recv{context_, source,   tag,
                    data,     transfer, comm_internal::DescribeTransfer(false, source, tag, data)};
    PostRecvLocked(*world_, world_ranks_[rank_], std::move(recv));
  }
  return requests_.Add(RequestInfo::Recv(source, tag, data), {.transfer = std::move(transfer)});
}

Status InProcessComm::RunCollective(std::string_view op, Contribution mine, const Wire& out,
                                    size_t offset) {
  TRIDENT_RETURN_IF_ERROR(CheckUsable(op));
  std::unique_lock<std::mutex> lock(world_->mu);
  if (!world_->abort_status.ok()) return AbortedError(op);
  RoundKey key = NextRoundKey();
  Round& round = JoinRoundLocked(*world_, key, rank_, Size(), std::move(mine));
  WaitResult result = WaitLocked(*world_, lock, Clock::now() + options_.collective_timeout,
                                 [&] { return round.done; });
  if (result == WaitResult::kAborted) return AbortedError(op);
  if (result == WaitResult::kTimedOut) return CollectiveTimeout(op, round);
  return LeaveRoundLocked(*world_, key, Size(), out, offset);
}

Status InProcessComm::CollectiveTimeout(std::string_view op, const Round& round) {
  std::vector<int> missing = MissingRanks(round);
  broken_ = std::string(op) + " that timed out";
  return comm_internal::TimeoutError(
      std::string(op) + " on " + std::to_string(Size()) + " ranks (waiting for ranks " +
          comm_internal::RankList(missing) + ")",
      options_.collective_timeout, "those ranks may have failed or called another collective");
}

Status InProcessComm::AllReduceSum(Wire data) {
  Contribution mine{CollectiveKind::kAllReduceSum, data.count, data.count, 0, ToFloats(data)};
  return RunCollective("AllReduceSum", std::move(mine), data, 0);
}

Status InProcessComm::AllGather(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckAllGatherSizes(send, recv, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("AllGather", send, recv));
  Contribution mine{CollectiveKind::kAllGather, send.count, recv.count, 0, ToFloats(send)};
  return RunCollective("AllGather", std::move(mine), recv, 0);
}

Status InProcessComm::ReduceScatterSum(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("ReduceScatterSum", send, recv));
  Contribution mine{CollectiveKind::kReduceScatterSum, send.count, recv.count, 0, ToFloats(send)};
  return RunCollective("ReduceScatterSum", std::move(mine), recv,
                       static_cast<size_t>(rank_) * recv.count);
}

Status InProcessComm::Broadcast(Wire data, int root) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer("Broadcast", "root", root, Size()));
  std::vector<float> copy;
  if (rank_ == root) copy = ToFloats(data);
  Contribution mine{CollectiveKind::kBroadcast, data.count, data.count, root, std::move(copy)};
  return RunCollective("Broadcast", std::move(mine), data, 0);
}

Status InProcessComm::Barrier() { return RunCollective("Barrier", Contribution{}, Wire(), 0); }

StatusOr<Request> InProcessComm::StartAllReduceSum(Wire data) {
  TRIDENT_RETURN_IF_ERROR(CheckUsable("StartAllReduceSum"));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckCount("StartAllReduceSum", data));
  Contribution mine{CollectiveKind::kStartAllReduceSum, data.count, data.count, 0, ToFloats(data)};
  InProcessOp op{.out = data};
  {
    std::lock_guard<std::mutex> lock(world_->mu);
    if (!world_->abort_status.ok()) return AbortedError("StartAllReduceSum");
    op.round = NextRoundKey();
    JoinRoundLocked(*world_, op.round, rank_, Size(), std::move(mine));
  }
  return requests_.Add(RequestInfo::Collective("AllReduceSum", data), std::move(op));
}

StatusOr<Request> InProcessComm::StartReduceScatterSum(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(CheckUsable("StartReduceScatterSum"));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("StartReduceScatterSum", send, recv));
  Contribution mine{CollectiveKind::kStartReduceScatterSum, send.count, recv.count, 0,
                    ToFloats(send)};
  InProcessOp op{.out = recv, .offset = static_cast<size_t>(rank_) * recv.count};
  {
    std::lock_guard<std::mutex> lock(world_->mu);
    if (!world_->abort_status.ok()) return AbortedError("StartReduceScatterSum");
    op.round = NextRoundKey();
    JoinRoundLocked(*world_, op.round, rank_, Size(), std::move(mine));
  }
  return requests_.Add(RequestInfo::Collective("ReduceScatterSum", send), std::move(op));
}

StatusOr<int> InProcessComm::MeetForSplit(const std::vector<int>& ranks) {
  auto key = std::make_tuple(context_, ranks, split_counts_[ranks]++);
  size_t index = std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin();
  std::unique_lock<std::mutex> lock(world_->mu);
  if (!world_->abort_status.ok()) return AbortedError("Split");
  inprocess_internal::Rendezvous& meeting = world_->splits[key];
  if (meeting.arrived == 0) {
    meeting.context = world_->next_context++;
    meeting.present.assign(ranks.size(), false);
  }
  meeting.present[index] = true;
  if (++meeting.arrived == static_cast<int>(ranks.size())) world_->cv.notify_all();
  WaitResult result = WaitLocked(*world_, lock, Clock::now() + options_.collective_timeout,
                                 [&] { return meeting.arrived == static_cast<int>(ranks.size()); });
  if (result == WaitResult::kAborted) return AbortedError("Split");
  if (result == WaitResult::kTimedOut) {
    std::vector<int> missing;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (!meeting.present[i]) missing.push_back(ranks[i]);
    }
    broken_ = "Split that timed out";
    return comm_internal::TimeoutError(
        "Split " + comm_internal::RankList(ranks) + " (waiting for ranks " +
            comm_internal::RankList(missing) + ")",
        options_.collective_timeout, "every listed rank must call Split with the same list");
  }
  int context = meeting.context;
  if (++meeting.departed == static_cast<int>(ranks.size())) world_->splits.erase(key);
  return context;
}

void InProcessComm::AbortJob(int exit_code) {
  comm_internal::FlushOutputStreams();
  std::_Exit(exit_code);
}

StatusOr<std::unique_ptr<Comm>> InProcessComm::Split(std::vector<int> ranks) {
  TRIDENT_RETURN_IF_ERROR(CheckUsable("Split"));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckSplitRanks(ranks, rank_, Size()));
  TRIDENT_ASSIGN_OR_RETURN(int context, MeetForSplit(ranks));
  std::vector<int> world_ranks;
  for (int r : ranks) world_ranks.push_back(world_ranks_[r]);
  int rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
  return std::unique_ptr<Comm>(
      new InProcessComm(world_, context, std::move(world_ranks), rank, options_));
}

Status RunGuarded(const std::function<Status(Comm&)>& body, Comm& comm) {
  try {
    return body(comm);
  } catch (const std::exception& e) {
    return Internal(std::string("uncaught exception: ") + e.what());
  } catch (...) {
    return Internal("uncaught exception of unknown type");
  }
}

}  // namespace

InProcessWorld::InProcessWorld(int num_ranks) {
  TRIDENT_CHECK(num_ranks >= 1) << "an in-process world needs at least one rank, got " << num_ranks;
  state_ = std::make_shared<WorldState>(num_ranks);
}

int InProcessWorld::NumRanks() const { return static_cast<int>(state_->mailboxes.size()); }

std::unique_ptr<Comm> InProcessWorld::MakeComm(int rank, const CommOptions& options) {
  TRIDENT_CHECK(rank >= 0 && rank < NumRanks()) << "rank " << rank << " of " << NumRanks();
  std::vector<int> world_ranks(NumRanks());
  for (int r = 0; r < NumRanks(); ++r) world_ranks[r] = r;
  return std::make_unique<InProcessComm>(state_, 0, std::move(world_ranks), rank, options);
}

void InProcessWorld::Abort(const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->abort_status.ok()) return;
    state_->abort_status = reason.ok() ? Internal("aborted") : reason;
  }
  state_->cv.notify_all();
}

Status RunInProcess(int num_ranks, const std::function<Status(Comm&)>& body,
                    const CommOptions& options) {
  if (num_ranks < 1) {
    return InvalidArgument("RunInProcess: needs at least one rank, got " +
                           std::to_string(num_ranks));
  }
  InProcessWorld world(num_ranks);
  std::vector<std::unique_ptr<Comm>> comms;
  for (int r = 0; r < num_ranks; ++r) comms.push_back(world.MakeComm(r, options));
  std::mutex mu;
  Status first_failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < num_ranks; ++r) {
    threads.emplace_back([&, r] {
      Status status = RunGuarded(body, *comms[r]);
      if (status.ok()) return;
      status = status.WithPrefix("rank " + std::to_string(r));
      {
        std::lock_guard<std::mutex> lock(mu);
        if (first_failure.ok()) first_failure = status;
      }
      world.Abort(status);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return first_failure;
}

}  // namespace trident
