// RequestTable: the pending requests of one Comm, and Wait, Test and Cancel over them, written
// once for every backend. A backend is a small plug-in: it starts a request (its Isend, Irecv
// and StartAllReduceSum make the backend's record, `Op`, and Add it here), polls one (Poll)
// and withdraws a receive (Withdraw). The table owns the rest of comm.h's request contract:
// inactive requests, requests of another Comm, the refusal to cancel sends and started
// collectives, the timeout message of a Wait, and making a finished request inactive.
//
//   class MpiComm final : public Comm, private RequestTable<MPI_Request>::Backend {
//     Status Wait(Request& r, std::chrono::milliseconds t) override {
//       return requests_.Wait(r, t);
//     }
//     Progress Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) override;
//     Status Withdraw(Pending& pending) override;
//     RequestTable<MPI_Request> requests_{this, this};
//   };
//
// Internal to runtime/comm. Thread-safety: none; a table is used by its Comm's one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/comm_checks.h"

namespace trident {

// What a request is: a transfer with its peer, tag and length, or a started collective.
struct RequestInfo {
  enum class Kind { kSend, kRecv, kCollective };

  static RequestInfo Send(int dest, int tag, const Wire& data);
  static RequestInfo Recv(int source, int tag, const Wire& data);
  // `op` names the collective ("AllReduceSum") and must outlive the request.
  static RequestInfo Collective(std::string_view op, const Wire& data);

  // "Irecv from rank 1 (tag 99, 4 floats)" or "AllReduceSum of 1024 floats".
  std::string Describe() const;

  Kind kind = Kind::kSend;
  int peer = 0;
  int tag = 0;
  Wire data;  // the buffer, for its size and element type
  std::string_view collective = {};
};

// What one poll of a pending request found: not yet complete, done (the request leaves the
// table and the call returns its status), or a failure of the poll itself that leaves the
// request active (a Test or Wait returns it; the request may be waited on again).
class Progress {
 public:
  // `waiting_for` is added to a Wait's timeout message: " (waiting for ranks [2])".
  static Progress Pending(std::string waiting_for = {});
  static Progress Done(Status status);
  static Progress PollFailed(Status error);
  // Done with the error, Done(ok) for true, Pending for false.
  static Progress FromDone(const StatusOr<bool>& done);

  bool pending() const { return state_ == State::kPending; }
  bool done() const { return state_ == State::kDone; }
  const Status& status() const { return status_; }
  const std::string& waiting_for() const { return waiting_for_; }

 private:
  enum class State { kPending, kDone, kPollFailed };
  Progress(State state, Status status, std::string waiting_for)
      : state_(state), status_(std::move(status)), waiting_for_(std::move(waiting_for)) {}

  State state_;
  Status status_;
  std::string waiting_for_;
};

// The part of RequestTable that does not depend on the backend's record.
class RequestTableBase {
 protected:
  RequestTableBase(const Comm* owner, std::string_view transfer_hint)
      : owner_(owner), transfer_hint_(transfer_hint) {}

  Request MakeRequest(int64_t id) const { return Request(owner_, id); }
  // The id of `request`, or nullopt when another Comm made it.
  std::optional<int64_t> IdOf(const Request& request) const;
  static void Deactivate(Request& request) { request = Request(); }
  // "Wait: <what> did not complete within 50 ms; hint: ..." for a Wait whose poll found the
  // request pending.
  Status WaitTimeout(const RequestInfo& info, const Progress& progress,
                     std::chrono::milliseconds timeout) const;
  // The InvalidArgument of a Cancel on a send or started collective; ok for a receive.
  static Status CheckCancellable(const RequestInfo& info);

  int64_t next_id_ = 1;

 private:
  const Comm* owner_;
  std::string_view transfer_hint_;
};

template <typename Op>
class RequestTable : public RequestTableBase {
 public:
  struct Pending {
    RequestInfo info;
    Op op;
  };

  // The backend's half: what differs between MPI, NCCL, threads and HostDeviceComm.
  class Backend {
   public:
    // Looks at `pending` once (timeout nullopt: a Test) or waits for it up to `timeout` (a
    // Wait). A completed request's status is its Done status; a backend resource the request
    // held (an event, a round) is released by the time Done is returned.
    virtual Progress Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) = 0;
    // Withdraws a receive; returns the status it ends with (ok when withdrawn before it matched,
    // the receive's own status when it had matched). The request leaves the table after.
    virtual Status Withdraw(Pending& pending) = 0;

   protected:
    ~Backend() = default;
  };

  // Requests carry `owner`, the Comm whose Wait, Test and Cancel come here. `transfer_hint`
  // ends the timeout message of a Wait on a transfer.
  // REQUIRES: owner, backend and transfer_hint's text outlive the table.
  RequestTable(const Comm* owner, Backend* backend,
               std::string_view transfer_hint = comm_internal::kTransferHint)
      : RequestTableBase(owner, transfer_hint), backend_(backend) {}
  RequestTable(const RequestTable&) = delete;
  RequestTable& operator=(const RequestTable&) = delete;

  // Tracks a started request; its Request is active until it finishes.
  Request Add(RequestInfo info, Op op);
  // The record of `request`, or null when this table does not hold it.
  Pending* Find(const Request& request);
  // For destructors: `visit(pending)` for every request still pending, in start order.
  void ForEach(const std::function<void(Pending&)>& visit);
  bool empty() const { return pending_.empty(); }

  // Comm::Wait, Comm::Test and Comm::Cancel (comm.h).
  Status Wait(Request& request, std::chrono::milliseconds timeout);
  StatusOr<bool> Test(Request& request);
  Status Cancel(Request& request);

 private:
  using Map = std::map<int64_t, Pending>;

  typename Map::iterator Lookup(const Request& request);
  // Forgets `it`, deactivates `request` and returns `status`.
  Status Finish(typename Map::iterator it, Request& request, Status status);

  Backend* backend_;
  Map pending_;
};

namespace comm_internal {

// Polls `look` until it reports done (true) or fails, or until `deadline` passes (then false);
// it looks at least once. Between looks it yields for the first millisecond, then sleeps
// briefly, so that oversubscribed ranks leave the CPU to the peers they wait for.
StatusOr<bool> PollUntil(std::chrono::steady_clock::time_point deadline,
                         const std::function<StatusOr<bool>()>& look);
// now + timeout, or now for a Test (timeout nullopt): the deadline of a Poll.
std::chrono::steady_clock::time_point PollDeadline(
    std::optional<std::chrono::milliseconds> timeout);
// "Wait" or "Test" (timeout nullopt): the call a Poll serves, for error messages.
std::string_view PollOp(std::optional<std::chrono::milliseconds> timeout);

}  // namespace comm_internal

template <typename Op>
Request RequestTable<Op>::Add(RequestInfo info, Op op) {
  const int64_t id = next_id_++;
  pending_.emplace(id, Pending{info, std::move(op)});
  return MakeRequest(id);
}

template <typename Op>
typename RequestTable<Op>::Pending* RequestTable<Op>::Find(const Request& request) {
  auto it = Lookup(request);
  return it == pending_.end() ? nullptr : &it->second;
}

template <typename Op>
void RequestTable<Op>::ForEach(const std::function<void(Pending&)>& visit) {
  for (auto& [id, pending] : pending_) visit(pending);
}

template <typename Op>
Status RequestTable<Op>::Wait(Request& request, std::chrono::milliseconds timeout) {
  if (!request.active()) return Status::Ok();
  auto it = Lookup(request);
  if (it == pending_.end()) return comm_internal::UnknownRequestError("Wait");
  Progress progress = backend_->Poll(it->second, timeout);
  if (progress.pending()) return WaitTimeout(it->second.info, progress, timeout);
  if (!progress.done()) return progress.status();
  return Finish(it, request, progress.status());
}

template <typename Op>
StatusOr<bool> RequestTable<Op>::Test(Request& request) {
  if (!request.active()) return true;
  auto it = Lookup(request);
  if (it == pending_.end()) return comm_internal::UnknownRequestError("Test");
  Progress progress = backend_->Poll(it->second, std::nullopt);
  if (progress.pending()) return false;
  if (!progress.done()) return progress.status();
  TRIDENT_RETURN_IF_ERROR(Finish(it, request, progress.status()));
  return true;
}

template <typename Op>
Status RequestTable<Op>::Cancel(Request& request) {
  if (!request.active()) return Status::Ok();
  auto it = Lookup(request);
  if (it == pending_.end()) return comm_internal::UnknownRequestError("Cancel");
  TRIDENT_RETURN_IF_ERROR(CheckCancellable(it->second.info));
  return Finish(it, request, backend_->Withdraw(it->second));
}

template <typename Op>
typename RequestTable<Op>::Map::iterator RequestTable<Op>::Lookup(const Request& request) {
  std::optional<int64_t> id = IdOf(request);
  return id ? pending_.find(*id) : pending_.end();
}

template <typename Op>
Status RequestTable<Op>::Finish(typename Map::iterator it, Request& request, Status status) {
  pending_.erase(it);
  Deactivate(request);
  return status;
}

}  // namespace trident
