// HostDeviceComm: one Comm over two communicators of the same ranks, routing each call by
// where its buffer lives: device memory to `device` (NCCL), host memory to `host` (MPI).
//
//   std::unique_ptr<Comm> world = std::make_unique<HostDeviceComm>(
//       std::move(mpi_world), std::move(nccl_world), IsCudaDevicePointer);
//
// A GPU job moves activations and gradients (tensors, in device memory) and also small host
// vectors: the step's loss and statistics, a vocab-parallel loss's row maxima, a checkpoint's
// messages. PyTorch's process groups do the same ("cpu:gloo,cuda:nccl"): every rank makes the
// same call with the same kind of buffer, so each inner communicator sees the same sequence of
// calls on every rank, and the Comm contract holds for the whole. Rank() and Size() are the
// host communicator's (both must agree). Barrier and AbortJob go to the device communicator
// (NCCL launches its queued transfers before meeting the others, and aborts its own
// communicator before MPI ends the job).
// Requests are this object's own; each maps to the request of the communicator that made it.
// A send and a receive of one transfer must have buffers of the same kind (device or host) on
// both ranks, as they do when both are tensors of the same backend.
// Thread-safety: as the inner communicators (one thread at a time).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "runtime/comm/comm.h"
#include "runtime/comm/request_table.h"

namespace trident {

// A HostDeviceComm request's record: the inner communicator's request.
struct InnerRequest {
  Comm* comm = nullptr;
  Request request;
};

class HostDeviceComm final : public Comm, private RequestTable<InnerRequest>::Backend {
 public:
  // Whether a buffer is in device memory.
  using IsDevicePointer = std::function<bool(const void*)>;

  // REQUIRES: host and device are communicators of the same ranks in the same order.
  HostDeviceComm(std::unique_ptr<Comm> host, std::unique_ptr<Comm> device,
                 IsDevicePointer is_device);
  ~HostDeviceComm() override = default;

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
  Status Barrier() override { return device_->Barrier(); }
  StatusOr<Request> StartAllReduceSum(Wire data) override;
  StatusOr<Request> StartReduceScatterSum(Wire send, Wire recv) override;
  StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) override;
  [[noreturn]] void AbortJob(int exit_code) override;

 private:
  using Requests = RequestTable<InnerRequest>;
  using Pending = Requests::Pending;

  // Requests::Backend: the inner communicator's Test, Wait and Cancel. A request stays active
  // as long as its inner one does (after a Wait that timed out, with the inner message).
  Progress Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) override;
  Status Withdraw(Pending& pending) override;

  // The communicator for a buffer at `data` (an empty buffer goes to the host).
  Comm& For(const Wire& data) const;
  StatusOr<Request> Wrap(StatusOr<Request> inner, Comm* comm, RequestInfo info);

  std::unique_ptr<Comm> host_;
  std::unique_ptr<Comm> device_;
  IsDevicePointer is_device_;
  Requests requests_{this, this};
};

}  // namespace trident
