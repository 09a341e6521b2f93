#include "runtime/comm/stream_comm.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/comm/comm_checks.h"
#include "runtime/comm/request_table.h"

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

// The stream's own communicator carries the data, and an acknowledgement per received message
// that completes the matching send (the rendezvous).
constexpr int kDataTag = 0;
constexpr int kAckTag = 1;

constexpr std::string_view kCollectiveHint = "a rank may have failed or called another collective";
constexpr std::string_view kTransferHint =
    "the peer may have failed, or not posted the matching Isend/Irecv in the same order (NCCL "
    "matches a pair's transfers by order, not by tag)";

// A transfer or collective's completion, shared by the host thread and the stream.
struct StreamOp {
  bool launched = false;  // handed to the stream (host thread only)
  bool done = false;      // guarded by Stream::mu_
  Status status;
};
using OpPtr = std::shared_ptr<StreamOp>;

struct QueuedTransfer {
  bool send = true;
  int peer = 0;
  Wire data;
  OpPtr op;
};

// What the stream runs in turn: a group of transfers, or a collective.
struct StreamItem {
  std::vector<QueuedTransfer> group;
  std::function<Status(Comm&)> collective;
  OpPtr collective_op;
};

// One communicator's stream: a thread that runs the launched items one at a time over
// `device`, a communicator only it uses.
class Stream {
 public:
  Stream(std::unique_ptr<Comm> device, std::chrono::milliseconds drain_timeout)
      : device_(std::move(device)), drain_timeout_(drain_timeout), thread_([this] { Run(); }) {}
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void Launch(StreamItem item);
  // Stops running: the running group is withdrawn, what is left is dropped.
  void Abort() {
    stop_ = true;
    cv_.notify_all();
  }
  // Waits until `op` is done or `deadline` passes; true once done.
  bool WaitFor(const StreamOp& op, Clock::time_point deadline);
  Status StatusOf(const StreamOp& op);

 private:
  void Run();
  Status RunGroup(const std::vector<QueuedTransfer>& group);
  void Finish(const StreamItem& item, const Status& status);

  std::unique_ptr<Comm> device_;
  std::chrono::milliseconds drain_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamItem> items_;  // launched, not yet finished (the front one runs)
  std::atomic<bool> stop_ = false;
  std::thread thread_;
};

Stream::~Stream() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, drain_timeout_, [this] { return stop_ || items_.empty(); });
  }
  stop_ = true;
  cv_.notify_all();
  thread_.join();
}

void Stream::Launch(StreamItem item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(item));
  }
  cv_.notify_all();
}

bool Stream::WaitFor(const StreamOp& op, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return op.done; });
}

Status Stream::StatusOf(const StreamOp& op) {
  std::lock_guard<std::mutex> lock(mu_);
  return op.status;
}

void Stream::Run() {
  while (true) {
    StreamItem item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !items_.empty(); });
      if (stop_) return;
      item = items_.front();
    }
    Finish(item, item.collective ? item.collective(*device_) : RunGroup(item.group));
  }
}

void Stream::Finish(const StreamItem& item, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const QueuedTransfer& t : item.group) {
      t.op->done = true;
      t.op->status = status;
    }
    if (item.collective_op) {
      item.collective_op->done = true;
      item.collective_op->status = status;
    }
    items_.pop_front();
  }
  cv_.notify_all();
}

// Posts every transfer of the group, then polls them together: a received message is
// acknowledged at once, a send completes with its acknowledgement, the group with its last
// transfer.
Status Stream::RunGroup(const std::vector<QueuedTransfer>& group) {
  struct Live {
    Request request;
    int ack_to = -1;  // a data receive: the peer to acknowledge once it completes
  };
  std::vector<Live> live;
  std::vector<Request> acks_sent;
  std::vector<float> ack_in(group.size());
  float ack_out = 1;
  for (size_t i = 0; i < group.size(); ++i) {
    const QueuedTransfer& t = group[i];
    if (t.data.count == 0) continue;
    if (t.send) {
      TRIDENT_ASSIGN_OR_RETURN(Request data, device_->Isend(t.data, t.peer, kDataTag));
      acks_sent.push_back(std::move(data));  // buffered by the host backend: waited at the end
      TRIDENT_ASSIGN_OR_RETURN(Request ack, device_->Irecv(Wire(&ack_in[i], 1), t.peer, kAckTag));
      live.push_back({std::move(ack), -1});
    } else {
      TRIDENT_ASSIGN_OR_RETURN(Request data, device_->Irecv(t.data, t.peer, kDataTag));
      live.push_back({std::move(data), t.peer});
    }
  }
  while (!live.empty()) {
    if (stop_) {
      for (Live& l : live) (void)device_->Cancel(l.request);
      return FailedPrecondition("the communicator was destroyed while its transfers ran");
    }
    bool progressed = false;
    for (auto it = live.begin(); it != live.end();) {
      TRIDENT_ASSIGN_OR_RETURN(bool done, device_->Test(it->request));
      if (!done) {
        ++it;
        continue;
      }
      if (it->ack_to >= 0) {
        TRIDENT_ASSIGN_OR_RETURN(Request ack,
                                 device_->Isend(Wire(&ack_out, 1), it->ack_to, kAckTag));
        acks_sent.push_back(std::move(ack));
      }
      it = live.erase(it);
      progressed = true;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (Request& r : acks_sent) TRIDENT_RETURN_IF_ERROR(device_->Wait(r, drain_timeout_));
  return Status::Ok();
}

class StreamComm final : public Comm, private RequestTable<OpPtr>::Backend {
 public:
  StreamComm(std::unique_ptr<Comm> host, std::unique_ptr<Comm> device, const CommOptions& options)
      : host_(std::move(host)), options_(options), stream_(std::move(device), timeout()) {}

  int Rank() const override { return host_->Rank(); }
  int Size() const override { return host_->Size(); }

  StatusOr<Request> Isend(Wire data, int dest, int tag) override {
    TRIDENT_RETURN_IF_ERROR(CheckTransfer("Isend", "dest", dest, tag, data));
    return Enqueue(true, RequestInfo::Send(dest, tag, data));
  }
  StatusOr<Request> Irecv(Wire data, int source, int tag) override {
    TRIDENT_RETURN_IF_ERROR(CheckTransfer("Irecv", "source", source, tag, data));
    return Enqueue(false, RequestInfo::Recv(source, tag, data));
  }
  Status Wait(Request& request, std::chrono::milliseconds timeout) override {
    return requests_.Wait(request, timeout);
  }
  StatusOr<bool> Test(Request& request) override { return requests_.Test(request); }
  Status Cancel(Request& request) override { return requests_.Cancel(request); }

  Status AllReduceSum(Wire data) override {
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckCount("AllReduceSum", data));
    return RunCollective("AllReduceSum", [=](Comm& c) { return c.AllReduceSum(data); });
  }
  Status AllGather(Wire send, Wire recv) override {
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckAllGatherSizes(send, recv, Size()));
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("AllGather", send, recv));
    return RunCollective("AllGather", [=](Comm& c) { return c.AllGather(send, recv); });
  }
  Status ReduceScatterSum(Wire send, Wire recv) override {
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, Size()));
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("ReduceScatterSum", send, recv));
    return RunCollective("ReduceScatterSum",
                         [=](Comm& c) { return c.ReduceScatterSum(send, recv); });
  }
  Status Broadcast(Wire data, int root) override {
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer("Broadcast", "root", root, Size()));
    return RunCollective("Broadcast", [=](Comm& c) { return c.Broadcast(data, root); });
  }
  Status Barrier() override {
    TRIDENT_RETURN_IF_ERROR(Usable("Barrier"));
    Launch();
    return host_->Barrier();
  }
  StatusOr<Request> StartAllReduceSum(Wire data) override {
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckCount("StartAllReduceSum", data));
    return StartCollective("AllReduceSum", data, [=](Comm& c) { return c.AllReduceSum(data); });
  }
  StatusOr<Request> StartReduceScatterSum(Wire send, Wire recv) override {
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, Size()));
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("StartReduceScatterSum", send, recv));
    return StartCollective("ReduceScatterSum", send,
                           [=](Comm& c) { return c.ReduceScatterSum(send, recv); });
  }
  StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) override {
    TRIDENT_RETURN_IF_ERROR(Usable("Split"));
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckSplitRanks(ranks, Rank(), Size()));
    Launch();
    TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> host, host_->Split(std::move(ranks)));
    return MakeStreamComm(*host, options_);
  }
  [[noreturn]] void AbortJob(int exit_code) override {
    host_->AbortJob(exit_code);
    std::_Exit(exit_code);  // not reached: GCC does not carry [[noreturn]] through a virtual call
  }

 private:
  using Requests = RequestTable<OpPtr>;
  using Pending = Requests::Pending;

  std::chrono::milliseconds timeout() const { return options_.collective_timeout; }

  Status Usable(std::string_view op) const {
    if (broken_.empty()) return Status::Ok();
    return comm_internal::BrokenCommError(op, broken_);
  }
  Status CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                       const Wire& data) const {
    TRIDENT_RETURN_IF_ERROR(Usable(op));
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer(op, role, peer, Size()));
    TRIDENT_RETURN_IF_ERROR(comm_internal::CheckTag(op, tag));
    return comm_internal::CheckCount(op, data);
  }
  Request Enqueue(bool send, RequestInfo info) {
    OpPtr op = std::make_shared<StreamOp>();
    queue_.push_back({send, info.peer, info.data, op});
    return requests_.Add(info, op);
  }
  // Hands the queue to the stream as one group.
  void Launch() {
    if (queue_.empty()) return;
    for (QueuedTransfer& t : queue_) t.op->launched = true;
    StreamItem item;
    item.group.swap(queue_);
    stream_.Launch(std::move(item));
  }
  StatusOr<OpPtr> LaunchCollective(std::string_view op, std::function<Status(Comm&)> run) {
    TRIDENT_RETURN_IF_ERROR(Usable(op));
    Launch();
    OpPtr done = std::make_shared<StreamOp>();
    done->launched = true;
    stream_.Launch({.group = {}, .collective = std::move(run), .collective_op = done});
    return done;
  }
  Status RunCollective(std::string_view op, std::function<Status(Comm&)> run) {
    TRIDENT_ASSIGN_OR_RETURN(OpPtr done, LaunchCollective(op, std::move(run)));
    if (stream_.WaitFor(*done, Clock::now() + timeout())) return stream_.StatusOf(*done);
    Break(std::string(op) + " that timed out");
    return comm_internal::TimeoutError(std::string(op) + " on " + std::to_string(Size()) + " ranks",
                                       timeout(), kCollectiveHint);
  }
  StatusOr<Request> StartCollective(std::string_view op, const Wire& data,
                                    std::function<Status(Comm&)> run) {
    TRIDENT_ASSIGN_OR_RETURN(OpPtr done, LaunchCollective(op, std::move(run)));
    return requests_.Add(RequestInfo::Collective(op, data), done);
  }
  void Break(std::string cause) {
    broken_ = std::move(cause);
    queue_.clear();
    stream_.Abort();
  }

  // Requests::Backend.
  Progress Poll(Pending& p, std::optional<std::chrono::milliseconds> timeout) override {
    Status usable = Usable(comm_internal::PollOp(timeout));
    if (!usable.ok()) return Progress::Done(usable);
    Launch();
    if (!stream_.WaitFor(*p.op, comm_internal::PollDeadline(timeout))) return Progress::Pending();
    return Progress::Done(stream_.StatusOf(*p.op));
  }
  Status Withdraw(Pending& p) override {
    if (!p.op->launched) {
      std::erase_if(queue_, [&](const QueuedTransfer& t) { return t.op == p.op; });
      return Status::Ok();
    }
    if (stream_.WaitFor(*p.op, Clock::now())) return stream_.StatusOf(*p.op);
    Break("Cancel of a launched " + p.info.Describe());
    return Status::Ok();
  }

  std::unique_ptr<Comm> host_;
  CommOptions options_;
  std::vector<QueuedTransfer> queue_;  // posted, not launched, in posting order
  std::string broken_;                 // what broke the communicator; empty while usable
  Requests requests_{this, this, kTransferHint};
  Stream stream_;  // last: destroyed first, draining while the rest is alive
};

}  // namespace

StatusOr<std::unique_ptr<Comm>> MakeStreamComm(Comm& host, const CommOptions& options) {
  std::vector<int> all(static_cast<size_t>(host.Size()));
  std::iota(all.begin(), all.end(), 0);
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> mine, host.Split(all));
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> device, host.Split(all));
  return std::unique_ptr<Comm>(new StreamComm(std::move(mine), std::move(device), options));
}

}  // namespace trident
