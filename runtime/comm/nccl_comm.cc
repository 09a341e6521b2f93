#include "runtime/comm/nccl_comm.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "runtime/comm/comm_checks.h"
#include "runtime/comm/roll_call.h"

namespace trident {

namespace nccl_internal {
namespace {

// "/work/main/runtime/comm/nccl_comm.cc" -> "runtime/comm/nccl_comm.cc".
std::string ShortFile(std::string_view file) {
  size_t at = file.rfind("runtime/comm/");
  return std::string(at == std::string_view::npos ? file : file.substr(at));
}

// "ncclSend failed at runtime/comm/nccl_comm.cc:120".
std::string Failed(const char* call, const char* file, int line) {
  std::string_view name(call);
  name = name.substr(0, name.find('('));
  return std::string(name) + " failed at " + ShortFile(file) + ":" + std::to_string(line);
}

}  // namespace

Status NcclResult(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess) return Status::Ok();
  std::string text = Failed(call, file, line) + ": " + ncclGetErrorString(code);
  const char* last = ncclGetLastError(nullptr);  // may be about an earlier call; still a clue
  if (last != nullptr && *last != '\0') text += " (NCCL's last error: " + std::string(last) + ")";
  return Internal(std::move(text));
}

Status CudaResult(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return Status::Ok();
  return Internal(Failed(call, file, line) + ": " + cudaGetErrorName(code) + ": " +
                  cudaGetErrorString(code));
}

void ReportIfError(const Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "trident: warning: %s\n", status.message().c_str());
}

}  // namespace nccl_internal

namespace {

using Clock = std::chrono::steady_clock;
using nccl_internal::ReportIfError;

constexpr std::string_view kCollectiveHint = "a rank may have failed or called another collective";

// Makes `device` current on this thread for its scope (the current device is per thread).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (device < 0 || cudaGetDevice(&saved_) != cudaSuccess || saved_ == device) return;
    restore_ = cudaSetDevice(device) == cudaSuccess;
  }
  ~DeviceGuard() {
    if (restore_) ReportIfError(TRIDENT_CUDA_COMM_CALL(cudaSetDevice(saved_)));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_ = -1;
  bool restore_ = false;
};

// The unique id travels as one float per byte (0..255, exact), after a flag that says
// whether rank 0 could make it.
std::vector<float> PackUniqueId(const ncclUniqueId& id, bool made) {
  std::vector<float> message = {made ? 1.0f : 0.0f};
  for (char byte : id.internal) message.push_back(static_cast<unsigned char>(byte));
  return message;
}

ncclUniqueId UnpackUniqueId(const std::vector<float>& message) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(static_cast<unsigned char>(message[i + 1]));
  }
  return id;
}

ncclDataType_t NcclType(const Wire& data) {
  return data.type == WireType::kFp32 ? ncclFloat32 : ncclBfloat16;
}

Status LaunchAllReduce(const Wire& data, ncclComm_t comm, cudaStream_t stream) {
  if (data.count == 0) return Status::Ok();
  return TRIDENT_NCCL_CALL(
      ncclAllReduce(data.data, data.data, data.count, NcclType(data), ncclSum, comm, stream));
}

}  // namespace

NcclComm::NcclComm(std::unique_ptr<Comm> host, const CommOptions& options)
    : host_(std::move(host)),
      options_(options),
      compute_stream_(static_cast<cudaStream_t>(options.device_stream)) {}

Status NcclComm::CheckOptions(const CommOptions& options) {
  if (options.device_stream != nullptr) return Status::Ok();
  return InvalidArgument(
      "comm backend 'nccl' needs CommOptions::device_stream, the compute stream its transfers "
      "are ordered after; hint: pass Compute::device_stream() of the CUDA compute backend "
      "(--device cuda)");
}

StatusOr<std::unique_ptr<Comm>> NcclComm::Create(std::unique_ptr<Comm> host,
                                                 const CommOptions& options) {
  if (host == nullptr) return InvalidArgument("NcclComm::Create: no host communicator");
  TRIDENT_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<NcclComm> comm(new NcclComm(std::move(host), options));
  TRIDENT_RETURN_IF_ERROR(comm->Init());
  return std::unique_ptr<Comm>(std::move(comm));
}

Status NcclComm::Init() {
  TRIDENT_CUDA_COMM_RETURN_IF_ERROR(cudaGetDevice(&device_));
  TRIDENT_CUDA_COMM_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TRIDENT_CUDA_COMM_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
  // ncclCommInitRank waits for every rank without a timeout: a roll call over the host
  // communicator first, so a rank that never comes is named instead of waited for.
  TRIDENT_RETURN_IF_ERROR(
      RollCall(*host_, options_.collective_timeout, "NCCL communicator creation"));
  TRIDENT_ASSIGN_OR_RETURN(ncclUniqueId id, ShareUniqueId());
  ncclComm_t comm = nullptr;
  TRIDENT_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&comm, Size(), id, Rank()));
  comm_ = comm;
  return Status::Ok();
}

// Rank 0 broadcasts even when ncclGetUniqueId failed, so the others fail at once too.
StatusOr<ncclUniqueId> NcclComm::ShareUniqueId() {
  ncclUniqueId id{};
  Status made = Status::Ok();
  if (Rank() == 0) made = TRIDENT_NCCL_CALL(ncclGetUniqueId(&id));
  std::vector<float> message = PackUniqueId(id, made.ok());
  TRIDENT_RETURN_IF_ERROR(host_->Broadcast(message, 0));
  if (!made.ok()) return made;
  if (message[0] != 1.0f) {
    return Internal(
        "rank 0 of the communicator could not make the NCCL unique id (its own "
        "error says why)");
  }
  return UnpackUniqueId(message);
}

NcclComm::~NcclComm() {
  DeviceGuard guard(device_);
  if (comm_ != nullptr) {
    Status drained = Drain();
    ReportIfError(drained);
    if (!drained.ok()) Break("destruction");
  }
  if (comm_ != nullptr) ReportIfError(TRIDENT_NCCL_CALL(ncclCommDestroy(comm_)));
  comm_ = nullptr;
  requests_.ForEach([this](Pending& p) { ReleaseEvent(p.op.done); });
  for (cudaEvent_t event : free_events_) {
    ReportIfError(TRIDENT_CUDA_COMM_CALL(cudaEventDestroy(event)));
  }
  if (order_event_ != nullptr) {
    ReportIfError(TRIDENT_CUDA_COMM_CALL(cudaEventDestroy(order_event_)));
  }
  if (stream_ != nullptr) ReportIfError(TRIDENT_CUDA_COMM_CALL(cudaStreamDestroy(stream_)));
}

Status NcclComm::Drain() {
  int launched = 0;
  requests_.ForEach([&launched](const Pending& p) { launched += p.op.done != nullptr; });
  if (launched == 0) return Status::Ok();
  TRIDENT_ASSIGN_OR_RETURN(cudaEvent_t last, AcquireEvent());
  Status recorded = TRIDENT_CUDA_COMM_CALL(cudaEventRecord(last, stream_));
  if (!recorded.ok()) {
    ReleaseEvent(last);
    return recorded;
  }
  StatusOr<bool> done = PollEvent(last, options_.collective_timeout);
  ReleaseEvent(last);
  if (!done.ok()) return done.status();
  if (*done) return Status::Ok();
  return comm_internal::TimeoutError(
      "destroying the NCCL communicator: " + std::to_string(launched) +
          " launched transfer(s) or collective(s)",
      options_.collective_timeout, "complete every request before destroying the communicator");
}

Status NcclComm::Usable(std::string_view op) const {
  if (broken_.empty()) return Status::Ok();
  return comm_internal::BrokenCommError(op, broken_);
}

Status NcclComm::CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                               const Wire& data) const {
  TRIDENT_RETURN_IF_ERROR(Usable(op));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer(op, role, peer, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckTag(op, tag));
  return comm_internal::CheckCount(op, data);
}

Status NcclComm::CheckCollective(std::string_view op, const Wire& data) const {
  TRIDENT_RETURN_IF_ERROR(Usable(op));
  return comm_internal::CheckCount(op, data);
}

bool IsCudaDeviceMemory(const void* data) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    (void)cudaGetLastError();  // not CUDA's memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

Status NcclComm::CheckDeviceMemory(std::string_view op, std::string_view name,
                                   const Wire& data) const {
  if (data.count == 0) return Status::Ok();
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, data.data);
  if (error == cudaErrorInvalidValue) {  // CUDA before 11 on memory it does not know
    (void)cudaGetLastError();
    attributes.type = cudaMemoryTypeUnregistered;
  } else if (error != cudaSuccess) {
    return nccl_internal::CudaResult(error, "cudaPointerGetAttributes", __FILE__, __LINE__);
  }
  const std::string what = std::string(op) + ": " + std::string(name);
  if (attributes.type == cudaMemoryTypeManaged) return Status::Ok();
  if (attributes.type != cudaMemoryTypeDevice) {
    return InvalidArgument(what +
                           " is host memory, but the NCCL backend moves device memory; hint: "
                           "pass a tensor of the CUDA compute backend (--device cuda), or use "
                           "the mpi backend for host buffers");
  }
  if (attributes.device == device_) return Status::Ok();
  return InvalidArgument(what + " is on CUDA device " + std::to_string(attributes.device) +
                         " but the communicator uses device " + std::to_string(device_) +
                         "; hint: make the communicator with the compute backend's device "
                         "current");
}

Request NcclComm::Enqueue(RequestInfo info, NcclOp op) {
  Request request = requests_.Add(info, op);
  queue_.push_back(requests_.Find(request));
  return request;
}

void NcclComm::Release(Pending& pending) {
  ReleaseEvent(pending.op.done);
  pending.op.done = nullptr;
  std::erase(queue_, &pending);
}

StatusOr<cudaEvent_t> NcclComm::AcquireEvent() {
  if (!free_events_.empty()) {
    cudaEvent_t event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  TRIDENT_CUDA_COMM_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

// Recording an event again is allowed at any time; a stream already waiting on its earlier
// record is not affected.
void NcclComm::ReleaseEvent(cudaEvent_t event) {
  if (event != nullptr) free_events_.push_back(event);
}

Status NcclComm::OrderAfterCompute() {
  TRIDENT_CUDA_COMM_RETURN_IF_ERROR(cudaEventRecord(order_event_, compute_stream_));
  return TRIDENT_CUDA_COMM_CALL(cudaStreamWaitEvent(stream_, order_event_, 0));
}

Status NcclComm::LaunchQueued() {
  if (queue_.empty()) return Status::Ok();
  std::vector<Pending*> launched;
  launched.swap(queue_);
  Status status = OrderAfterCompute();
  if (status.ok()) status = LaunchGroup(launched);
  for (size_t i = 0; status.ok() && i < launched.size(); ++i) {
    StatusOr<cudaEvent_t> event = AcquireEvent();
    status = event.status();
    if (!status.ok()) break;
    launched[i]->op.done = *event;
    status = TRIDENT_CUDA_COMM_CALL(cudaEventRecord(*event, stream_));
  }
  if (!status.ok()) Break("launch of queued transfers that failed");
  return status;
}

// Zero-length transfers are left out on both ranks, so the pair's order still agrees.
Status NcclComm::LaunchGroup(const std::vector<Pending*>& transfers) {
  TRIDENT_NCCL_RETURN_IF_ERROR(ncclGroupStart());
  Status status = Status::Ok();
  for (const Pending* p : transfers) {
    const size_t count = p->info.data.count;
    const ncclDataType_t type = NcclType(p->info.data);
    const int peer = p->info.peer;
    if (count == 0) continue;
    status = p->info.kind == RequestInfo::Kind::kSend
                 ? TRIDENT_NCCL_CALL(ncclSend(p->op.source, count, type, peer, comm_, stream_))
                 : TRIDENT_NCCL_CALL(ncclRecv(p->op.target, count, type, peer, comm_, stream_));
    if (!status.ok()) break;
  }
  Status ended = TRIDENT_NCCL_CALL(ncclGroupEnd());  // closes the group even after a failure
  return status.ok() ? ended : status;
}

StatusOr<cudaEvent_t> NcclComm::LaunchCollective(std::string_view op, const Launcher& launch) {
  TRIDENT_RETURN_IF_ERROR(LaunchQueued());
  StatusOr<cudaEvent_t> done = AcquireEvent();
  Status status = done.status();
  if (status.ok()) status = OrderAfterCompute();
  if (status.ok()) status = launch();
  if (status.ok()) status = TRIDENT_CUDA_COMM_CALL(cudaEventRecord(*done, stream_));
  if (status.ok()) return *done;
  if (done.ok()) ReleaseEvent(*done);
  Break(std::string(op) + " that failed to launch");
  return status;
}

Status NcclComm::RunCollective(std::string_view op, const Launcher& launch) {
  DeviceGuard guard(device_);
  TRIDENT_ASSIGN_OR_RETURN(cudaEvent_t done, LaunchCollective(op, launch));
  StatusOr<bool> finished = PollEvent(done, options_.collective_timeout);
  ReleaseEvent(done);
  if (!finished.ok()) return finished.status();
  if (*finished) return Status::Ok();
  Break(std::string(op) + " that timed out");
  return comm_internal::TimeoutError(std::string(op) + " on " + std::to_string(Size()) + " ranks",
                                     options_.collective_timeout, kCollectiveHint);
}

StatusOr<bool> NcclComm::Query(cudaEvent_t event) {
  const cudaError_t state = cudaEventQuery(event);
  if (state == cudaSuccess) return true;
  if (state != cudaErrorNotReady) {
    Status status = nccl_internal::CudaResult(state, "cudaEventQuery", __FILE__, __LINE__);
    Break("CUDA error");
    return status;
  }
  (void)cudaGetLastError();  // "not ready" is no failure: leave no error behind for others
  ncclResult_t async = ncclSuccess;
  Status status = TRIDENT_NCCL_CALL(ncclCommGetAsyncError(comm_, &async));
  if (status.ok() && (async == ncclSuccess || async == ncclInProgress)) return false;
  if (status.ok()) {
    status = nccl_internal::NcclResult(async, "an NCCL operation", __FILE__, __LINE__);
  }
  Break("asynchronous NCCL error");
  return status;
}

StatusOr<bool> NcclComm::PollEvent(cudaEvent_t event, std::chrono::milliseconds timeout) {
  return comm_internal::PollUntil(Clock::now() + timeout, [&] { return Query(event); });
}

void NcclComm::Break(std::string cause) {
  if (broken_.empty()) broken_ = std::move(cause);
  queue_.clear();
  if (comm_ == nullptr) return;
  ReportIfError(TRIDENT_NCCL_CALL(ncclCommAbort(comm_)));
  comm_ = nullptr;
}

StatusOr<Request> NcclComm::Isend(Wire data, int dest, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Isend", "dest", dest, tag, data));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("Isend", "data", data));
  return Enqueue(RequestInfo::Send(dest, tag, data), {.source = data.data});
}

StatusOr<Request> NcclComm::Irecv(Wire data, int source, int tag) {
  TRIDENT_RETURN_IF_ERROR(CheckTransfer("Irecv", "source", source, tag, data));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("Irecv", "data", data));
  return Enqueue(RequestInfo::Recv(source, tag, data), {.target = data.data});
}

Progress NcclComm::Poll(Pending& p, std::optional<std::chrono::milliseconds> timeout) {
  DeviceGuard guard(device_);
  Status status = Usable(comm_internal::PollOp(timeout));
  if (status.ok()) status = LaunchQueued();
  Progress progress =
      status.ok()
          ? Progress::FromDone(PollEvent(p.op.done, timeout.value_or(std::chrono::milliseconds(0))))
          : Progress::Done(status);
  if (progress.done()) Release(p);
  return progress;
}

// A launched receive cannot be withdrawn from NCCL: unless it already completed, the NCCL
// communicator is aborted (nccl_comm.h).
Status NcclComm::Withdraw(Pending& p) {
  Status status = Status::Ok();
  if (p.op.done != nullptr && broken_.empty()) {
    DeviceGuard guard(device_);
    StatusOr<bool> done = Query(p.op.done);
    status = done.status();
    if (done.ok() && !*done) Break("Cancel of a launched " + p.info.Describe());
  }
  Release(p);
  return status;
}

Status NcclComm::AllReduceSum(Wire data) {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("AllReduceSum", data));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("AllReduceSum", "data", data));
  return RunCollective("AllReduceSum", [&] { return LaunchAllReduce(data, comm_, stream_); });
}

Status NcclComm::AllGather(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckAllGatherSizes(send, recv, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("AllGather", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("AllGather", recv));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("AllGather", "send", send));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("AllGather", "recv", recv));
  return RunCollective("AllGather", [&]() -> Status {
    if (send.count == 0) return Status::Ok();
    return TRIDENT_NCCL_CALL(
        ncclAllGather(send.data, recv.data, send.count, NcclType(send), comm_, stream_));
  });
}

Status NcclComm::ReduceScatterSum(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("ReduceScatterSum", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("ReduceScatterSum", send));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("ReduceScatterSum", "send", send));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("ReduceScatterSum", "recv", recv));
  return RunCollective("ReduceScatterSum", [&]() -> Status {
    if (recv.count == 0) return Status::Ok();
    return TRIDENT_NCCL_CALL(ncclReduceScatter(send.data, recv.data, recv.count, NcclType(recv),
                                               ncclSum, comm_, stream_));
  });
}

Status NcclComm::Broadcast(Wire data, int root) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckPeer("Broadcast", "root", root, Size()));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("Broadcast", data));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("Broadcast", "data", data));
  return RunCollective("Broadcast", [&]() -> Status {
    if (data.count == 0) return Status::Ok();
    return TRIDENT_NCCL_CALL(
        ncclBroadcast(data.data, data.data, data.count, NcclType(data), root, comm_, stream_));
  });
}

// The host communicator's barrier: it waits for the ranks, not for their GPU work. Queued
// transfers are launched first, so a peer waiting for them is not held up by the barrier.
Status NcclComm::Barrier() {
  TRIDENT_RETURN_IF_ERROR(Usable("Barrier"));
  DeviceGuard guard(device_);
  TRIDENT_RETURN_IF_ERROR(LaunchQueued());
  Status status = host_->Barrier();
  if (IsCommTimeout(status)) Break("Barrier that timed out");
  return status;
}

StatusOr<Request> NcclComm::StartAllReduceSum(Wire data) {
  TRIDENT_RETURN_IF_ERROR(CheckCollective("StartAllReduceSum", data));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("StartAllReduceSum", "data", data));
  DeviceGuard guard(device_);
  TRIDENT_ASSIGN_OR_RETURN(cudaEvent_t done, LaunchCollective("StartAllReduceSum", [&] {
                             return LaunchAllReduce(data, comm_, stream_);
                           }));
  return requests_.Add(RequestInfo::Collective("AllReduceSum", data), {.done = done});
}

StatusOr<Request> NcclComm::StartReduceScatterSum(Wire send, Wire recv) {
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckReduceScatterSizes(send, recv, Size()));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckNoOverlap("StartReduceScatterSum", send, recv));
  TRIDENT_RETURN_IF_ERROR(CheckCollective("StartReduceScatterSum", send));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("StartReduceScatterSum", "send", send));
  TRIDENT_RETURN_IF_ERROR(CheckDeviceMemory("StartReduceScatterSum", "recv", recv));
  DeviceGuard guard(device_);
  TRIDENT_ASSIGN_OR_RETURN(
      cudaEvent_t done, LaunchCollective("StartReduceScatterSum", [&]() -> Status {
        if (recv.count == 0) return Status::Ok();
        return TRIDENT_NCCL_CALL(ncclReduceScatter(send.data, recv.data, recv.count, NcclType(recv),
                                                   ncclSum, comm_, stream_));
      }));
  return requests_.Add(RequestInfo::Collective("ReduceScatterSum", send), {.done = done});
}

StatusOr<std::unique_ptr<Comm>> NcclComm::Split(std::vector<int> ranks) {
  TRIDENT_RETURN_IF_ERROR(Usable("Split"));
  TRIDENT_RETURN_IF_ERROR(comm_internal::CheckSplitRanks(ranks, Rank(), Size()));
  DeviceGuard guard(device_);
  TRIDENT_RETURN_IF_ERROR(LaunchQueued());
  StatusOr<std::unique_ptr<Comm>> host = host_->Split(std::move(ranks));
  if (!host.ok()) {
    if (IsCommTimeout(host.status())) Break("Split that timed out");
    return host.status();
  }
  return Create(std::move(*host), options_);
}

void NcclComm::AbortJob(int exit_code) {
  comm_internal::FlushOutputStreams();
  if (comm_ != nullptr) (void)ncclCommAbort(comm_);  // its kernels stop; errors do not matter now
  comm_ = nullptr;
  host_->AbortJob(exit_code);
  std::_Exit(exit_code);  // not reached: GCC does not carry [[noreturn]] through a virtual call
}

}  // namespace trident
