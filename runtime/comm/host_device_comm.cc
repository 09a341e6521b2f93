#include "runtime/comm/host_device_comm.h"

#include <cstdlib>

#include "core/check.h"

namespace trident {

HostDeviceComm::HostDeviceComm(std::unique_ptr<Comm> host, std::unique_ptr<Comm> device,
                               IsDevicePointer is_device)
    : host_(std::move(host)), device_(std::move(device)), is_device_(std::move(is_device)) {
  TRIDENT_CHECK(host_->Rank() == device_->Rank() && host_->Size() == device_->Size())
      << "HostDeviceComm: the host communicator is rank " << host_->Rank() << " of "
      << host_->Size() << ", the device one rank " << device_->Rank() << " of " << device_->Size();
}

Comm& HostDeviceComm::For(const void* data, size_t count) const {
  return count > 0 && is_device_(data) ? *device_ : *host_;
}

StatusOr<Request> HostDeviceComm::Wrap(StatusOr<Request> inner, Comm* comm, RequestInfo info) {
  if (!inner.ok()) return inner.status();
  return requests_.Add(info, InnerRequest{comm, std::move(*inner)});
}

Progress HostDeviceComm::Poll(Pending& pending, std::optional<std::chrono::milliseconds> timeout) {
  InnerRequest& inner = pending.op;
  Status status;
  if (timeout) {
    status = inner.comm->Wait(inner.request, *timeout);
  } else {
    status = inner.comm->Test(inner.request).status();
  }
  if (!inner.request.active()) return Progress::Done(status);
  return status.ok() ? Progress::Pending() : Progress::PollFailed(status);
}

Status HostDeviceComm::Withdraw(Pending& pending) {
  return pending.op.comm->Cancel(pending.op.request);
}

StatusOr<Request> HostDeviceComm::Isend(std::span<const float> data, int dest, int tag) {
  Comm& comm = For(data.data(), data.size());
  return Wrap(comm.Isend(data, dest, tag), &comm, RequestInfo::Send(dest, tag, data.size()));
}

StatusOr<Request> HostDeviceComm::Irecv(std::span<float> data, int source, int tag) {
  Comm& comm = For(data.data(), data.size());
  return Wrap(comm.Irecv(data, source, tag), &comm, RequestInfo::Recv(source, tag, data.size()));
}

Status HostDeviceComm::AllReduceSum(std::span<float> data) {
  return For(data.data(), data.size()).AllReduceSum(data);
}

Status HostDeviceComm::AllGather(std::span<const float> send, std::span<float> recv) {
  return For(recv.data(), recv.size()).AllGather(send, recv);
}

Status HostDeviceComm::ReduceScatterSum(std::span<const float> send, std::span<float> recv) {
  return For(send.data(), send.size()).ReduceScatterSum(send, recv);
}

Status HostDeviceComm::Broadcast(std::span<float> data, int root) {
  return For(data.data(), data.size()).Broadcast(data, root);
}

StatusOr<Request> HostDeviceComm::StartAllReduceSum(std::span<float> data) {
  Comm& comm = For(data.data(), data.size());
  return Wrap(comm.StartAllReduceSum(data), &comm,
              RequestInfo::Collective("AllReduceSum", data.size()));
}

StatusOr<Request> HostDeviceComm::StartReduceScatterSum(std::span<const float> send,
                                                        std::span<float> recv) {
  Comm& comm = For(send.data(), send.size());
  return Wrap(comm.StartReduceScatterSum(send, recv), &comm,
              RequestInfo::Collective("ReduceScatterSum", send.size()));
}

StatusOr<std::unique_ptr<Comm>> HostDeviceComm::Split(std::vector<int> ranks) {
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> host, host_->Split(ranks));
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> device, device_->Split(std::move(ranks)));
  return std::unique_ptr<Comm>(
      std::make_unique<HostDeviceComm>(std::move(host), std::move(device), is_device_));
}

void HostDeviceComm::AbortJob(int exit_code) {
  device_->AbortJob(exit_code);
  std::_Exit(exit_code);  // not reached: GCC does not carry [[noreturn]] through a virtual call
}

}  // namespace trident
