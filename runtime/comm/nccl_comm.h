// The NCCL Comm backend for GPU jobs: one rank per GPU, buffers in device memory.
//
//   TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> world,
//                            MakeWorldComm("nccl", {.device_stream = compute.device_stream()}));
//
// An NcclComm pairs an NCCL communicator with a host communicator of the same ranks (MPI): the
// host one carries the NCCL unique id when communicators are made (world and Split), Barrier
// and AbortJob. Every buffer is float32 device memory (or managed memory) of the CUDA device
// that was current when the communicator was made; host memory is refused with
// InvalidArgument before anything is sent.
//
// Streams: each NcclComm launches its NCCL work on a stream of its own. Before launching, it
// records an event on the compute stream (CommOptions::device_stream) and makes its stream wait
// for it, so a transfer or collective sees every op queued on the compute stream before the
// launch. Every request has a completion event on the comm stream; Wait and Test poll it (with
// ncclCommGetAsyncError), so once they report completion the compute stream may use the
// buffer. The comm stream runs its work in launch order: a launched transfer or collective
// holds back everything launched after it on the same communicator until it completes.
//
// Point-to-point: NCCL has no tags. It matches a pair's sends and receives in the order they
// are launched, and this backend launches them in the order they were posted. So a pair's
// transfers must be posted in the same order on both ranks (the runtime checks its layouts
// with JobLayout::CheckInOrderTransfers); tags are checked (0..kMaxTag) but not used for
// matching, and a tag mismatch goes undetected, as does a count mismatch (MPI reports both).
// Isend and Irecv only queue the transfer; the queue is launched as one ncclGroupStart/
// ncclGroupEnd group at the next Wait, Test, collective, Barrier or Split, so a pair's crossing
// sends and receives posted before that point progress together instead of deadlocking.
// Queued transfers that are never launched (no Wait, Test or collective follows before the
// communicator is destroyed) are dropped. Zero-length transfers and collectives launch nothing.
//
// Timeouts: a Wait that times out leaves the request active and the communicator usable (its
// NCCL work stays launched). A blocking collective waits up to the collective timeout for its
// completion event, which also covers the compute work queued before it and the transfers
// launched before it; past that it aborts the NCCL communicator (ncclCommAbort) and every later
// call fails (BrokenCommError), as in MPI. Asynchronous NCCL errors (a peer process or the
// network gone) are found while polling: the communicator is aborted and the error returned.
// Creation starts with a roll call over the host communicator (roll_call.h): host rank 0 names
// the ranks that did not arrive within the collective timeout instead of waiting in
// ncclCommInitRank, which cannot time out; every rank calls it only after all have arrived and
// received the id (Split's id exchange too runs over the host communicator, within its
// timeouts). NCCL also
// connects ranks lazily, on the host, inside the launch (ncclGroupEnd): the first transfer in
// each direction between two ranks, and the first collective of each algorithm, block the
// launching call until the peers launch their side, and no timeout of this backend covers that
// wait (NCCL_RUNTIME_CONNECT=0 connects the collectives when the communicator is made). Once
// connected, a transfer waits on the GPU.
//
// Cancel: a receive still queued is withdrawn (it never reaches NCCL; cancel only one whose
// message the peer will not send, or the peer's send would match this rank's next receive
// from it). A launched receive cannot be withdrawn from NCCL: unless it has completed, Cancel
// aborts the NCCL communicator, marks it broken and returns ok. The runtime cancels receives
// only on its way to aborting the job. Sends and started collectives cannot be cancelled
// (InvalidArgument), as in MPI.
//
// Barrier is the host communicator's (it waits for the ranks, not for their GPU work).
// AbortJob aborts the NCCL communicator, then ends the job through the host communicator
// (MPI_Abort). The destructor launches nothing new; it waits up to the collective timeout for
// launched work, then destroys the NCCL communicator (ncclCommDestroy, which may wait for the
// peers' own destroy: destroy communicators in the same order on every rank), or aborts it if
// the work did not finish or the communicator is broken.
//
// Every NCCL and CUDA call goes through TRIDENT_NCCL_CALL or TRIDENT_CUDA_COMM_CALL, which turn
// a failure into an Internal status naming the call, file:line and the library's error text.
// Thread-safety: one thread at a time per NcclComm (as for every Comm); the CUDA device it was
// made on is made current for its calls, so that thread may differ from the creating one.
// Different NcclComms may be used from different threads, but NCCL kernels of different
// communicators that wait for each other's ranks can deadlock the GPU: keep a consistent
// order of collectives across communicators on every rank.
//
// This header is included only inside runtime/comm, and only when built with NCCL and MPI.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/request_table.h"

namespace trident {

namespace nccl_internal {
// Statuses for an NCCL result and a CUDA error: ok for success, else Internal("ncclAllReduce
// failed at runtime/comm/nccl_comm.cc:120: unhandled cuda error ...: <NCCL's last error>").
Status NcclResult(ncclResult_t code, const char* call, const char* file, int line);
Status CudaResult(cudaError_t code, const char* call, const char* file, int line);
// For destructors, which cannot return a status: prints a non-ok status to stderr.
void ReportIfError(const Status& status);
}  // namespace nccl_internal

// A Status for one NCCL or CUDA call. `call` is the full call expression; its name is reported.
#define TRIDENT_NCCL_CALL(call) \
  ::trident::nccl_internal::NcclResult((call), #call, __FILE__, __LINE__)
#define TRIDENT_NCCL_RETURN_IF_ERROR(call) TRIDENT_RETURN_IF_ERROR(TRIDENT_NCCL_CALL(call))
#define TRIDENT_CUDA_COMM_CALL(call) \
  ::trident::nccl_internal::CudaResult((call), #call, __FILE__, __LINE__)
#define TRIDENT_CUDA_COMM_RETURN_IF_ERROR(call) \
  TRIDENT_RETURN_IF_ERROR(TRIDENT_CUDA_COMM_CALL(call))

// Whether `data` is CUDA device (or managed) memory: what HostDeviceComm routes to NCCL.
bool IsCudaDeviceMemory(const void* data);

// A pending request's record in an NcclComm: an Isend's or Irecv's buffer, and its completion
// event on the comm stream (null while a transfer is queued).
struct NcclOp {
  const void* source = nullptr;  // an Isend's data
  void* target = nullptr;        // an Irecv's data
  cudaEvent_t done = nullptr;
};

class NcclComm final : public Comm, private RequestTable<NcclOp>::Backend {
 public:
  // The NCCL communicator of `host`'s ranks on the current CUDA device: a roll call over
  // `host`, then host rank 0 makes the unique id and broadcasts it over `host`, then every rank
  // calls ncclCommInitRank. Collective
  // over `host`. Fails with InvalidArgument when options.device_stream is null.
  static StatusOr<std::unique_ptr<Comm>> Create(std::unique_ptr<Comm> host,
                                                const CommOptions& options);
  // InvalidArgument, with a hint, when `options` lacks what Create needs (device_stream).
  static Status CheckOptions(const CommOptions& options);
  ~NcclComm() override;

  int Rank() const override { return host_->Rank(); }
  int Size() const override { return host_->Size(); }

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
  using Requests = RequestTable<NcclOp>;
  using Pending = Requests::Pending;
  // Launches NCCL work on the comm stream (comm_, stream_).
  using Launcher = std::function<Status()>;

  static constexpr std::string_view kNcclTransferHint =
      "the peer may have failed, or not posted the matching Isend/Irecv in the same order (NCCL "
      "matches a pair's transfers by order, not by tag)";

  NcclComm(std::unique_ptr<Comm> host, const CommOptions& options);
  // Device, stream and events, the roll call and the unique id over host_, then
  // ncclCommInitRank.
  Status Init();
  StatusOr<ncclUniqueId> ShareUniqueId();

  Status Usable(std::string_view op) const;
  Status CheckTransfer(std::string_view op, std::string_view role, int peer, int tag,
                       const Wire& data) const;
  Status CheckCollective(std::string_view op, const Wire& data) const;
  // InvalidArgument unless `data` is device (or managed) memory of this communicator's device.
  Status CheckDeviceMemory(std::string_view op, std::string_view name, const Wire& data) const;

  // Requests::Backend. Poll launches the queue, then polls the request's event; Withdraw
  // drops a queued receive, or aborts the communicator for a launched one not yet complete.
  Progress Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) override;
  Status Withdraw(Pending& pending) override;
  // Queues a transfer to be launched with the next group.
  Request Enqueue(RequestInfo info, NcclOp op);
  // Gives back what `pending` holds (its event, its place in the queue) as it leaves the table.
  void Release(Pending& pending);

  StatusOr<cudaEvent_t> AcquireEvent();
  void ReleaseEvent(cudaEvent_t event);
  // Makes the comm stream wait for the work queued on the compute stream so far.
  Status OrderAfterCompute();
  // Launches the queued transfers as one group, each followed by its completion event. A
  // failure breaks the communicator (which of them reached NCCL is unknown).
  Status LaunchQueued();
  Status LaunchGroup(const std::vector<Pending*>& transfers);
  // Launches the queue, then `launch` ordered after the compute stream; returns the
  // collective's completion event. A failure breaks the communicator.
  StatusOr<cudaEvent_t> LaunchCollective(std::string_view op, const Launcher& launch);
  // A blocking collective: launch, then wait up to the collective timeout.
  Status RunCollective(std::string_view op, const Launcher& launch);
  // One look at `event`: true once done. Asynchronous NCCL errors break the communicator.
  StatusOr<bool> Query(cudaEvent_t event);
  // Polls `event` until done or `timeout` passes (then false).
  StatusOr<bool> PollEvent(cudaEvent_t event, std::chrono::milliseconds timeout);
  // Aborts the NCCL communicator, drops the queue and refuses later calls, naming `cause`.
  void Break(std::string cause);
  // For the destructor: waits up to the collective timeout for the launched work.
  Status Drain();

  std::unique_ptr<Comm> host_;
  CommOptions options_;
  cudaStream_t compute_stream_;
  int device_ = -1;
  ncclComm_t comm_ = nullptr;  // null once aborted
  cudaStream_t stream_ = nullptr;
  cudaEvent_t order_event_ = nullptr;
  std::vector<cudaEvent_t> free_events_;
  Requests requests_{this, this, kNcclTransferHint};
  std::vector<Pending*> queue_;  // transfers posted but not launched, in posting order
  std::string broken_;           // what broke the communicator; empty while usable
};

}  // namespace trident
