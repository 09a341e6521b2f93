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

Comm& HostDeviceComm::For(const Wire& data) const {
  return data.count > 0 && is_device_(data.data) ? *device_ : *host_;
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

StatusOr<Request> HostDeviceComm::Isend(Wire data, int dest, int tag) {
  Comm& comm = For(data);
  return Wrap(comm.Isend(data, dest, tag), &comm, RequestInfo::Send(dest, tag, data));
}

StatusOr<Request> HostDeviceComm::Irecv(Wire data, int source, int tag) {
  Comm& comm = For(data);
  return Wrap(comm.Irecv(data, source, tag), &comm, RequestInfo::Recv(source, tag, data));
}

Status HostDeviceComm::AllReduceSum(Wire data) { return For(data).AllReduceSum(data); }

Status HostDeviceComm::AllGather(Wire send, Wire recv) { return For(recv).AllGather(send, recv); }

Status HostDeviceComm::ReduceScatterSum(Wire send, Wire recv) {
  return For(send).ReduceScatterSum(send, recv);
}

Status HostDeviceComm::Broadcast(Wire data, int root) { return For(data).Broadcast(data, root); }

StatusOr<Request> HostDeviceComm::StartAllReduceSum(Wire data) {
  Comm& comm = For(data);
  return Wrap(comm.StartAllReduceSum(data), &comm, RequestInfo::Collective("AllReduceSum", data));
}

StatusOr<Request> HostDeviceComm::StartReduceScatterSum(Wire send, Wire recv) {
  Comm& comm = For(send);
  return Wrap(comm.StartReduceScatterSum(send, recv), &comm,
              RequestInfo::Collective("ReduceScatterSum", send));
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
