#include "runtime/comm/request_table.h"

#include <thread>

namespace trident {

using Clock = std::chrono::steady_clock;

RequestInfo RequestInfo::Send(int dest, int tag, const Wire& data) {
  return RequestInfo{.kind = Kind::kSend, .peer = dest, .tag = tag, .data = data};
}

RequestInfo RequestInfo::Recv(int source, int tag, const Wire& data) {
  return RequestInfo{.kind = Kind::kRecv, .peer = source, .tag = tag, .data = data};
}

RequestInfo RequestInfo::Collective(std::string_view op, const Wire& data) {
  return RequestInfo{.kind = Kind::kCollective, .data = data, .collective = op};
}

std::string RequestInfo::Describe() const {
  if (kind == Kind::kCollective) return comm_internal::DescribeCollective(collective, data);
  return comm_internal::DescribeTransfer(kind == Kind::kSend, peer, tag, data);
}

Progress Progress::Pending(std::string waiting_for) {
  return Progress(State::kPending, Status::Ok(), std::move(waiting_for));
}

Progress Progress::Done(Status status) { return Progress(State::kDone, std::move(status), {}); }

Progress Progress::PollFailed(Status error) {
  return Progress(State::kPollFailed, std::move(error), {});
}

Progress Progress::FromDone(const StatusOr<bool>& done) {
  if (!done.ok()) return Done(done.status());
  return *done ? Done(Status::Ok()) : Pending();
}

std::optional<int64_t> RequestTableBase::IdOf(const Request& request) const {
  if (request.owner_ != owner_) return std::nullopt;
  return request.id_;
}

Status RequestTableBase::WaitTimeout(const RequestInfo& info, const Progress& progress,
                                     std::chrono::milliseconds timeout) const {
  const bool collective = info.kind == RequestInfo::Kind::kCollective;
  return comm_internal::TimeoutError(
      "Wait: " + info.Describe() + progress.waiting_for(), timeout,
      collective ? comm_internal::kStartedCollectiveHint : transfer_hint_);
}

Status RequestTableBase::CheckCancellable(const RequestInfo& info) {
  switch (info.kind) {
    case RequestInfo::Kind::kCollective:
      return comm_internal::CancelCollectiveError(info.Describe());
    case RequestInfo::Kind::kSend:
      return comm_internal::CancelSendError(info.Describe());
    case RequestInfo::Kind::kRecv:
      return Status::Ok();
  }
  return Status::Ok();
}

namespace comm_internal {

StatusOr<bool> PollUntil(Clock::time_point deadline, const std::function<StatusOr<bool>()>& look) {
  const Clock::time_point start = Clock::now();
  while (true) {
    TRIDENT_ASSIGN_OR_RETURN(bool done, look());
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    if (Clock::now() - start < std::chrono::milliseconds(1)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

Clock::time_point PollDeadline(std::optional<std::chrono::milliseconds> timeout) {
  return Clock::now() + timeout.value_or(std::chrono::milliseconds(0));
}

std::string_view PollOp(std::optional<std::chrono::milliseconds> timeout) {
  return timeout ? "Wait" : "Test";
}

}  // namespace comm_internal
}  // namespace trident
