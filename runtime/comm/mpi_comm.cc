#include "runtime/comm/mpi_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "runtime/comm/comm_checks.h"
#include "runtime/comm/request_table.h"

namespace trident {

namespace {

using comm_internal::PollUntil;
using mpi_internal::ReportIfError;
using Clock = std::chrono::steady_clock;
// A pending request's record: its MPI request (MPI forbids cancelling or freeing a started
// collective's).
using Requests = RequestTable<MPI_Request>;
using Pending = Requests::Pending;

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

// bf16 travels as 16-bit words; its sum adds in fp32 and rounds once per pairwise reduction.
MPI_Datatype MpiType(const Wire& data) {
  return data.type == WireType::kFp32 ? MPI_FLOAT : MPI_UINT16_T;
}

// The element count as MPI takes it (CheckCount keeps it within an int).
int Count(const Wire& data) { return static_cast<int>(data.count); }

void Bf16Sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = ToBf16(FromBf16(a[i]) + FromBf16(b[i]));
}

MPI_Op SumOp(const Wire& data) {
  if (data.type == WireType::kFp32) return MPI_SUM;
  static const MPI_Op bf16_sum = [] {
    MPI_Op op = MPI_OP_NULL;
    ReportIfError(TRIDENT_MPI_CALL(MPI_Op_create(&Bf16Sum, /*commute=*/1, &op)));
    return op;
  }();
  return bf16_sum;
}

class MpiComm final : public Comm, private Requests::Backend {
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
  // Requests::Backend: polls with MPI_Test; withdraws with MPI_Cancel.
  Progress Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) override;
  Status Withdraw(Pending& pending) override;

  Status CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                       const Wire& data) const;
  Status CheckCollective(std::string_view op, const Wire& data) const;
  // One MPI_Test of `pending`; on completion checks the received count.
  StatusOr<bool> TestOnce(Pending& pending);
  // Starts tracking `request`, an MPI request started for `info`.
  Request Track(RequestInfo info, MPI_Request request) { return requests_.Add(info, request); }
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
  Requests requests_{this, this};
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
  requests_.ForEach([this](Pending& p) {
    switch (p.info.kind) {
      case RequestInfo::Kind::kCollective:  // breaks the communicator unless done in time
        ReportIfError(Complete(p.info.collective, p.op));
        break;
      case RequestInfo::Kind::kSend:
        ReportIfError(TRIDENT_MPI_CALL(MPI_Request_free(&p.op)));
        break;
      case RequestInfo::Kind::kRecv:
        ReportIfError(TRIDENT_MPI_CALL(MPI_Cancel(&p.op)));
        ReportIfError(TRIDENT_MPI_CALL(MPI_Wait(&p.op, MPI_STATUS_IGNORE)));
        break;
    }
  });
  // A timed-out collective still uses the communicator; it must not be freed under it.
  if (broken_.empty()) ReportIfError(TRIDENT_MPI_CALL(MPI_Comm_free(&comm_)));
}

Status MpiComm::CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                              const Wire& data) const {
  if (!broken_.empty()) return comm_internal::BrokenCommError(op, broken_);
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer(op, role, peer, size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckTag(op, tag));
  return comm_internal::CheckCount(op, data);
}

Status MpiComm::CheckCollective(std::string_view op, const Wire& data) const {
  if (!broken_.empty()) return comm_internal::BrokenCommError(op, broken_);
  return comm_internal::CheckCount(op, data);
}

StatusOr<Request> MpiComm::Isend(Wire data, int dest, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Isend", "dest", dest, tag, data));
  MPI_Request request = MPI_REQUEST_NULL;
  TRIDENT_MPI_RETURN_IF_ERROR(
      MPI_Isend(data.data, Count(data), MpiType(data), dest, tag, comm_, &request));
  return Track(RequestInfo::Send(dest, tag, data), request);
}

StatusOr<Request> MpiComm::Irecv(Wire data, int source, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Irecv", "source", source, tag, data));
  MPI_Request request = MPI_REQUEST_NULL;
  TRIDENT_MPI_RETURN_IF_ERROR(
      MPI_Irecv(data.data, Count(data), MpiType(data), source, tag, comm_, &request));
  return Track(RequestInfo::Recv(source, tag, data), request);
}

StatusOr<bool> MpiComm::TestOnce(Pending& p) {
  int done = 0;
  MPI_Status status;
  int code = MPI_Test(&p.op, &done, &status);
  if (code != MPI_SUCCESS && ErrorClass(code) == MPI_ERR_TRUNCATE) {
    return comm_internal::MessageSizeError(
        p.info.Describe(), "more than " + std::to_string(p.info.data.count), p.info.data);
  }
  TRIDENT_RETURN_IF_ERROR(mpi_internal::MpiResult(code, "MPI_Test", __FILE__, __LINE__));
  if (!done || p.info.kind != RequestInfo::Kind::kRecv) return done != 0;
  int received = 0;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Get_count(&status, MpiType(p.info.data), &received));
  if (static_cast<size_t>(received) != p.info.data.count) {
    return comm_internal::MessageSizeError(p.info.Describe(), std::to_string(received),
                                           p.info.data);
  }
  return true;
}

Progress MpiComm::Poll(Pending& p, std::optional<std::chrono::milliseconds> timeout) {
  return Progress::FromDone(
      PollUntil(comm_internal::PollDeadline(timeout), [&] { return TestOnce(p); }));
}

Status MpiComm::Withdraw(Pending& p) {
  MPI_Status status;
  Status result = TRIDENT_MPI_CALL(MPI_Cancel(&p.op));
  if (result.ok()) result = TRIDENT_MPI_CALL(MPI_Wait(&p.op, &status));
  int cancelled = 1;
  if (result.ok()) result = TRIDENT_MPI_CALL(MPI_Test_cancelled(&status, &cancelled));
  if (result.ok() && !cancelled) {  // it had matched: check it like a completed receive
    int received = 0;
    result = TRIDENT_MPI_CALL(MPI_Get_count(&status, MpiType(p.info.data), &received));
    if (result.ok() && static_cast<size_t>(received) != p.info.data.count) {
      result =
          comm_internal::MessageSizeError(p.info.Describe(), std::to_string(received), p.info.data);
    }
  }
  return result;
}

Status MpiComm::Complete(std::string_view op, MPI_Request request) {
  StatusOr<bool> done =
      PollUntil(Clock::now() + options_.collective_timeout, [&]() -> StatusOr<bool> {
        int flag = 0;
        TRIDENT_MPI_RETURN_IF_ERROR(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
        return flag != 0;
      });
  if (!done.ok()) return done.status();
  if (*done) return Status::Ok();
  // The request cannot be freed while active (MPI forbids it for collectives): the
  // communicator is now unusable.
  broken_ = std::string(op) + " that timed out";
  return comm_internal::TimeoutError(std::string(op) + " on " + std::to_string(size_) + " ranks",
                                     options_.collective_timeout,
                                     "a rank may have failed or called another collective");
}

Status MpiComm::AllReduceSum(Wire data) {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("AllReduceSum", data));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Iallreduce(MPI_IN_PLACE, data.data, Count(data), MpiType(data),
                                             SumOp(data), comm_, &request));
  return Complete("AllReduceSum", request);
}

Status MpiComm::AllGather(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckAllGatherSizes(send, recv, size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("AllGather", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("AllGather", recv));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Iallgather(send.data, Count(send), MpiType(send), recv.data,
                                             Count(send), MpiType(recv), comm_, &request));
  return Complete("AllGather", request);
}

Status MpiComm::ReduceScatterSum(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("ReduceScatterSum", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("ReduceScatterSum", send));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Ireduce_scatter_block(
      send.data, recv.data, Count(recv), MpiType(recv), SumOp(recv), comm_, &request));
  return Complete("ReduceScatterSum", request);
}

Status MpiComm::Broadcast(Wire data, int root) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer("Broadcast", "root", root, size_));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("Broadcast", data));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(
      MPI_Ibcast(data.data, Count(data), MpiType(data), root, comm_, &request));
  return Complete("Broadcast", request);
}

Status MpiComm::Barrier() {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("Barrier", Wire()));
  MPI_Request request;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Ibarrier(comm_, &request));
  return Complete("Barrier", request);
}

StatusOr<Request> MpiComm::StartAllReduceSum(Wire data) {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("StartAllReduceSum", data));
  MPI_Request request = MPI_REQUEST_NULL;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Iallreduce(MPI_IN_PLACE, data.data, Count(data), MpiType(data),
                                             SumOp(data), comm_, &request));
  return Track(RequestInfo::Collective("AllReduceSum", data), request);
}

StatusOr<Request> MpiComm::StartReduceScatterSum(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, size_));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("StartReduceScatterSum", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("StartReduceScatterSum", send));
  MPI_Request request = MPI_REQUEST_NULL;
  TRIDENT_MPI_RETURN_IF_ERROR(MPI_Ireduce_scatter_block(
      send.data, recv.data, Count(recv), MpiType(recv), SumOp(recv), comm_, &request));
  return Track(RequestInfo::Collective("ReduceScatterSum", send), request);
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
  std::vector<MPI_Request>& requests = meeting_.requests;
  const int count = static_cast<int>(requests.size());
  TRIDENT_ASSIGN_OR_RETURN(bool done, PollUntil(deadline, [&]() -> StatusOr<bool> {
                             int flag = 0;
                             TRIDENT_MPI_RETURN_IF_ERROR(
                                 MPI_Testall(count, requests.data(), &flag, MPI_STATUSES_IGNORE));
                             return flag != 0;
                           }));
  if (done) return Status::Ok();
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
