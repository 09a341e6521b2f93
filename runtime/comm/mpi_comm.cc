#include "runtime/comm/mpi_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "runtime/comm/comm_checks.h"

namespace trident {

namespace {

using mpi_internal::ReportIfError;
using Clock = std::chrono::steady_clock;

// Split's messages on the parent use tags above the users' (comm.h): the meeting's digests and
// verdicts, then MPI_Comm_create_group's own traffic.
constexpr int kSplitDigestTag = kMaxTag + 1;
constexpr int kSplitVerdictTag = kMaxTag + 2;
constexpr int kSplitCreateTag = kMaxTag + 3;

constexpr std::string_view kSplitHint = "every listed rank must call Split with the same list";

// FNV-1a over the list, as a non-negative int: ranks compare lists by digest.
int ListDigest(const std::vector<int>& ranks) {
  uint32_t hash = 2166136261u;
  for (int r : ranks) hash = (hash ^ static_cast<uint32_t>(r)) * 16777619u;
  return static_cast<int>(hash & 0x7fffffffu);
}

constexpr std::string_view kTransferHint =
    "the peer may have failed, or not posted the matching Isend/Irecv with the same tag";

int ErrorClass(int code) {
  int error_class = MPI_ERR_UNKNOWN;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) return MPI_ERR_UNKNOWN;
  return error_class;
}

// Frees an MPI group when it goes out of scope.
class GroupGuard {
 public:
  GroupGuard() = default;
  ~GroupGuard() {
    if (group != MPI_GROUP_NULL) ReportIfError(TRIDENT_MPI_CALL(MPI_Group_free(&group)));
  }
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

  MPI_Group group = MPI_GROUP_NULL;
};

// Yields for the first millisecond of a wait, then sleeps briefly between polls, so that
// oversubscribed ranks (more ranks than cores) leave the CPU to the peers they wait for.
void Backoff(Clock::time_point start) {
  if (Clock::now() - start < std::chrono::milliseconds(1)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

class MpiComm final : public Comm {
 public:
  MpiComm(std::shared_ptr<MpiSession> session, MPI_Comm comm, int rank, int size,
          const CommOptions& options)
      : session_(std::move(session)), comm_(comm), rank_(rank), size_(size), options_(options) {}
  ~MpiComm() override;

  // Takes ownership of `comm` (freed on failure too) and sets MPI_ERRORS_RETURN on it.
  static StatusOr<std::unique_ptr<Comm>> Wrap(std::shared_ptr<MpiSession> session, MPI_Comm comm,
                                              const CommOptions& options);

  int Rank() const override { return rank_; }
  int Size() const override { return size_; }

  StatusOr<Request> Isend(std::span<const float> data, int dest, int tag) override;
  StatusOr<Request> Irecv(std::span<float> data, int source, int tag) override;
  Status Wait(Request& request, std::chrono::milliseconds timeout) override;
  StatusOr<bool> Test(Request& request) override;
  Status Cancel(Request& request) override;

  Status AllReduceSum(std::span<float> data) override;
  Status AllGather(std::span<const float> send, std::span<float> recv) override;
  Status ReduceScatterSum(std::span<const float> send, std::span<float> recv) override;
  Status Broadcast(std::span<float> data, int root) override;
  Status Barrier() override;
  StatusOr<Request> StartAllReduceSum(std::span<float> data) override;
  StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) override;
  [[noreturn]] void AbortJob(int exit_code) override;

 private:
  // An outstanding Isend or Irecv (peer and tag set), or a started collective (`collective`
  // names it; MPI forbids cancelling or freeing its request).
  struct Pending {
    bool is_send = false;
    int peer = 0;
    int tag = 0;
    size_t count = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    std::string_view collective = {};  // "AllReduceSum"; empty for p2p

    bool IsCollective() const { return !collective.empty(); }
    std::string Describe() const {
      if (IsCollective()) return comm_internal::DescribeCollective(collective, count);
      return comm_internal::DescribeTransfer(is_send, peer, tag, count);
    }
  };
  using PendingMap = std::map<int64_t, Pending>;

  Status CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                       size_t count) const;
  Status CheckCollective(std::string_view op, size_t count) const;
  Request Track(Pending pending);
  PendingMap::iterator Find(const Request& request);
  // One MPI_Test of `it`; on completion checks the received count.
  StatusOr<bool> TestOnce(PendingMap::iterator it);
  // Forgets `it`'s request, deactivates `request` and returns `status`.
  Status Finish(PendingMap::iterator it, Request& request, Status status);
  // Polls a started collective until it completes or the collective timeout passes.
  Status Complete(std::string_view op, MPI_Request request);
  // The listed ranks meet before MPI_Comm_create_group, which cannot time out: each sends its
  // list's digest to the leader ranks[0], which answers whether all lists matched.
  Status MeetForSplit(const std::vector<int>& ranks);
  // Polls meeting_.requests until all complete; past `deadline` cancels them and breaks the
  // communicator.
  Status FinishMeeting(const std::vector<int>& ranks, Clock::time_point deadline);

  std::shared_ptr<MpiSession> session_;
  MPI_Comm comm_;
  int rank_;
  int size_;
  CommOptions options_;
  int64_t next_request_id_ = 1;
  PendingMap pending_;
  std::string broken_;  // what timed out; empty while usable
  // Split's meeting buffers; members, so that an abandoned receive never writes to a dead stack.
  struct {
    int digest = 0;
    int verdict = 0;
    std::vector<int> digests;
    std::vector<MPI_Request> requests;
  } meeting_;
};

StatusOr<std::unique_ptr<Comm>> MpiComm::Wrap(std::shared_ptr<MpiSession> session, MPI_Comm comm,
                                              const CommOptions& options) {
  int rank = 0;
  int size = 0;
  Status status = TRIDENT_MPI_CALL(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  if (status.ok()) status = TRIDENT_MPI_CALL(MPI_Comm_rank(comm, &rank));
  if (status.ok()) status = TRIDENT_MPI_CALL(MPI_Comm_size(comm, &size));
  if (!status.ok()) {
    ReportIfError(TRIDENT_MPI_CALL(MPI_Comm_free(&comm)));
    return status;
  }
  return std::unique_ptr<Comm>(new MpiComm(std::move(session), comm, rank, size, options));
}

MpiComm::~MpiComm() {
  for (auto& [id, p] : pending_) {
    if (p.IsCollective()) {  // breaks the communicator if it does not complete in time
      ReportIfError(Complete(p.collective, p.request));
      continue;
    }
    if (p.is_send) {
      ReportIfError(TRIDENT_MPI_CALL(MPI_Request_free(&p.request)));
      continue;
    }
    ReportIfError(TRIDENT_MPI_CALL(MPI_Cancel(&p.request)));
    ReportIfError(TRIDENT_MPI_CALL(MPI_Wait(&p.request, MPI_STATUS_IGNORE)));
  }
  // A timed-out collective still uses the communicator; it must not be freed under it.
  if (broken_.empty()) ReportIfError(TRIDENT_MPI_CALL(MPI_Comm_free(&comm_)));
}

Status MpiComm::CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                              size_t count) const {
  if (!broken_.empty()) return comm_internal::BrokenCommError(op, broken_);
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer(op, role, peer, size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckTag(op, tag));
  return comm_internal::CheckCount(op, count);
}

Status MpiComm::CheckCollective(std::string_view op, size_t count) const {
  if (!broken_.empty()) return comm_internal::BrokenCommError(op, broken_);
  return comm_internal::CheckCount(op, count);
}

Request MpiComm::Track(Pending pending) {
  int64_t id = next_request_id_++;
  pending_.emplace(id, pending);
  return MakeRequest(id);
}

MpiComm::PendingMap::iterator MpiComm::Find(const Request& request) {
  if (!Owns(request)) return pending_.end();
  return pending_.find(RequestId(request));
}

StatusOr<Request> MpiComm::Isend(std::span<const float> data, int dest, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Isend", "dest", dest, tag, data.size()));
  Pending p{true, dest, tag, data.size(), MPI_REQUEST_NULL};
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_FLOAT, dest,
                                        tag, comm_, &p.request));
  return Track(p);
}

StatusOr<Request> MpiComm::Irecv(std::span<float> data, int source, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Irecv", "source", source, tag, data.size()));
  Pending p{false, source, tag, data.size(), MPI_REQUEST_NULL};
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Irecv(data.data(), static_cast<int>(data.size()), MPI_FLOAT,
                                        source, tag, comm_, &p.request));
  return Track(p);
}

StatusOr<bool> MpiComm::TestOnce(PendingMap::iterator it) {
  Pending& p = it->second;
  int done = 0;
  MPI_Status status;
  int code = MPI_Test(&p.request, &done, &status);
  if (code != MPI_SUCCESS && ErrorClass(code) == MPI_ERR_TRUNCATE) {
    return comm_internal::MessageSizeError(p.Describe(), "more than " + std::to_string(p.count));
  }
  TRIDENT_RETURN_IF_ERROR(mpi_internal::MpiResult(code, "MPI_Test", __FILE__, __LINE__));
  if (!done || p.is_send || p.IsCollective()) return done != 0;
  int received = 0;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Get_count(&status, MPI_FLOAT, &received));
  if (static_cast<size_t>(received) != p.count) {
    return comm_internal::MessageSizeError(p.Describe(), std::to_string(received));
  }
  return true;
}

Status MpiComm::Finish(PendingMap::iterator it, Request& request, Status status) {
  pending_.erase(it);
  Deactivate(request);
  return status;
}

Status MpiComm::Wait(Request& request, std::chrono::milliseconds timeout) {
  if (!request.active()) return Status::Ok();
  auto it = Find(request);
  if (it == pending_.end()) return comm_internal::UnknownRequestError("Wait");
  Clock::time_point start = Clock::now();
  while (true) {
    StatusOr<bool> done = TestOnce(it);
    if (!done.ok()) return Finish(it, request, done.status());
    if (*done) return Finish(it, request, Status::Ok());
    if (Clock::now() - start >= timeout) break;
    Backoff(start);
  }
  const Pending& p = it->second;
  return comm_internal::TimeoutError(
      "Wait: " + p.Describe(), timeout,
      p.IsCollective() ? comm_internal::kStartedCollectiveHint : kTransferHint);
}

StatusOr<bool> MpiComm::Test(Request& request) {
  if (!request.active()) return true;
  auto it = Find(request);
  if (it == pending_.end()) return comm_internal::UnknownRequestError("Test");
  StatusOr<bool> done = TestOnce(it);
  if (!done.ok()) return Finish(it, request, done.status());
  if (!*done) return false;
  TRIDENT_RETURN_IF_ERROR(Finish(it, request, Status::Ok()));
  return true;
}

Status MpiComm::Cancel(Request& request) {
  if (!request.active()) return Status::Ok();
  auto it = Find(request);
  if (it == pending_.end()) return comm_internal::UnknownRequestError("Cancel");
  Pending& p = it->second;
  if (p.IsCollective()) return comm_internal::CancelCollectiveError(p.Describe());
  if (p.is_send) return comm_internal::CancelSendError(p.Describe());
  MPI_Status status;
  Status result = TRIDENT_MPI_CALL(MPI_Cancel(&p.request));
  if (result.ok()) result = TRIDENT_MPI_CALL(MPI_Wait(&p.request, &status));
  int cancelled = 1;
  if (result.ok()) result = TRIDENT_MPI_CALL(MPI_Test_cancelled(&status, &cancelled));
  if (result.ok() && !cancelled) {  // it had matched: check it like a completed receive
    int received = 0;
    result = TRIDENT_MPI_CALL(MPI_Get_count(&status, MPI_FLOAT, &received));
    if (result.ok() && static_cast<size_t>(received) != p.count) {
      result = comm_internal::MessageSizeError(p.Describe(), std::to_string(received));
    }
  }
  return Finish(it, request, result);
}

Status MpiComm::Complete(std::string_view op, MPI_Request request) {
  Clock::time_point start = Clock::now();
  while (true) {
    int done = 0;
    TRIDENT_MPI_RETURN_IF_ERROR(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return Status::Ok();
    if (Clock::now() - start >= options_.collective_timeout) break;
    Backoff(start);
  }
  // The request cannot be freed while active (MPI forbids it for collectives): the
  // communicator is now unusable.
  broken_ = std::string(op) + " that timed out";
  return comm_internal::TimeoutError(std::string(op) + " on " + std::to_string(size_) + " ranks",
                                     options_.collective_timeout,
                                     "a rank may have failed or called another collective");
}

Status MpiComm::AllReduceSum(std::span<float> data) {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("AllReduceSum", data.size()));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Iallreduce(MPI_IN_PLACE, data.data(),
                                             static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                                             comm_, &request));
  return Complete("AllReduceSum", request);
}

Status MpiComm::AllGather(std::span<const float> send, std::span<float> recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckAllGatherSizes(send.size(), recv.size(), size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("AllGather", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("AllGather", recv.size()));
  int count = static_cast<int>(send.size());
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Iallgather(send.data(), count, MPI_FLOAT, recv.data(), count,
                                             MPI_FLOAT, comm_, &request));
  return Complete("AllGather", request);
}

Status MpiComm::ReduceScatterSum(std::span<const float> send, std::span<float> recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send.size(), recv.size(), size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("ReduceScatterSum", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("ReduceScatterSum", send.size()));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Ireduce_scatter_block(send.data(), recv.data(),
                                                        static_cast<int>(recv.size()), MPI_FLOAT,
                                                        MPI_SUM, comm_, &request));
  return Complete("ReduceScatterSum", request);
}

Status MpiComm::Broadcast(std::span<float> data, int root) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer("Broadcast", "root", root, size_));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("Broadcast", data.size()));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(
      MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_FLOAT, root, comm_, &request));
  return Complete("Broadcast", request);
}

Status MpiComm::Barrier() {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("Barrier", 0));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Ibarrier(comm_, &request));
  return Complete("Barrier", request);
}

StatusOr<Request> MpiComm::StartAllReduceSum(std::span<float> data) {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("StartAllReduceSum", data.size()));
  Pending p{.count = data.size(), .collective = "AllReduceSum"};
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Iallreduce(MPI_IN_PLACE, data.data(),
                                             static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                                             comm_, &p.request));
  return Track(p);
}

// MPI_COMM_WORLD rather than comm_: MPI promises to end only the processes of the communicator
// passed, and this may be a sub-communicator.
void MpiComm::AbortJob(int exit_code) {
  comm_internal::FlushOutputStreams();
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; if it ever did, end this rank at least
}

Status MpiComm::MeetForSplit(const std::vector<int>& ranks) {
  Clock::time_point deadline = Clock::now() + options_.collective_timeout;
  const int others = static_cast<int>(ranks.size()) - 1;
  meeting_.digest = ListDigest(ranks);
  meeting_.verdict = 0;
  meeting_.digests.assign(others, 0);
  meeting_.requests.assign(ranks[0] == rank_ ? others : 2, MPI_REQUEST_NULL);
  if (ranks[0] == rank_) {
    for (int i = 0; i < others; ++i) {
      TRIDENT_MPI_RETURN_IF_ERROR(MPI_Irecv(&meeting_.digests[i], 1, MPI_INT, ranks[i + 1],
                                            kSplitDigestTag, comm_, &meeting_.requests[i]));
    }
    TRIDENT_RETURN_IF_ERROR(FinishMeeting(ranks, deadline));
    meeting_.verdict =
        std::count(meeting_.digests.begin(), meeting_.digests.end(), meeting_.digest) == others;
    for (int i = 0; i < others; ++i) {
      TRIDENT_MPI_RETURN_IF_ERROR(MPI_Isend(&meeting_.verdict, 1, MPI_INT, ranks[i + 1],
                                            kSplitVerdictTag, comm_, &meeting_.requests[i]));
    }
  } else {
    TRIDENT_MPI_RETURN_IF_ERROR(MPI_Isend(&meeting_.digest, 1, MPI_INT, ranks[0], kSplitDigestTag,
                                          comm_, &meeting_.requests[0]));
    TRIDENT_MPI_RETURN_IF_ERROR(MPI_Irecv(&meeting_.verdict, 1, MPI_INT, ranks[0], kSplitVerdictTag,
                                          comm_, &meeting_.requests[1]));
  }
  TRIDENT_RETURN_IF_ERROR(FinishMeeting(ranks, deadline));
  if (meeting_.verdict) return Status::Ok();
  return InvalidArgument("Split " + comm_internal::RankList(ranks) +
                         ": the listed ranks passed different rank lists; hint: " +
                         std::string(kSplitHint) + ", in the same order");
}

Status MpiComm::FinishMeeting(const std::vector<int>& ranks, Clock::time_point deadline) {
  Clock::time_point start = Clock::now();
  std::vector<MPI_Request>& requests = meeting_.requests;
  const int count = static_cast<int>(requests.size());
  while (true) {
    int done = 0;
    TRIDENT_MPI_RETURN_IF_ERROR(MPI_Testall(count, requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) return Status::Ok();
    if (Clock::now() >= deadline) break;
    Backoff(start);
  }
  for (MPI_Request& request : requests) {
    if (request == MPI_REQUEST_NULL) continue;
    ReportIfError(TRIDENT_MPI_CALL(MPI_Cancel(&request)));
    ReportIfError(TRIDENT_MPI_CALL(MPI_Request_free(&request)));
  }
  broken_ = "Split that timed out";
  return comm_internal::TimeoutError(
      "Split " + comm_internal::RankList(ranks) + " (meeting of the listed ranks)",
      options_.collective_timeout, kSplitHint);
}

StatusOr<std::unique_ptr<Comm>> MpiComm::Split(std::vector<int> ranks) {
  if (!broken_.empty()) return comm_internal::BrokenCommError("Split", broken_);
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckSplitRanks(ranks, rank_, size_));
  GroupGuard parent;
  GroupGuard group;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Comm_group(comm_, &parent.group));
  TRIDENT_MPI_RETURN_IF_ERROR(
      MPI_Group_incl(parent.group, static_cast<int>(ranks.size()), ranks.data(), &group.group));
  TRIDENT_RETURN_IF_ERROR(MeetForSplit(ranks));
  MPI_Comm sub = MPI_COMM_NULL;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Comm_create_group(comm_, group.group, kSplitCreateTag, &sub));
  return Wrap(session_, sub, options_);
}

}  // namespace

StatusOr<std::unique_ptr<Comm>> MakeMpiWorldComm(std::shared_ptr<MpiSession> session,
                                                 const CommOptions& options) {
  if (session == nullptr) return InvalidArgument("MakeMpiWorldComm: no MPI session");
  MPI_Comm world = MPI_COMM_NULL;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  return MpiComm::Wrap(std::move(session), world, options);
}

}  // namespace trident
