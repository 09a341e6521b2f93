#include "runtime/comm/host_device_comm.h"

#include <cstdlib>

#include "core/check.h"
#include "runtime/comm/comm_checks.h"

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

StatusOr<Request> HostDeviceComm::Wrap(StatusOr<Request> inner, Comm* comm) {
  if (!inner.ok()) return inner.status();
  const int64_t id = next_id_++;
  requests_.emplace(id, Inner{comm, std::move(*inner)});
  return MakeRequest(id);
}

HostDeviceComm::Inner* HostDeviceComm::Find(const Request& request) {
  if (!Owns(request)) return nullptr;
  auto it = requests_.find(RequestId(request));
  return it == requests_.end() ? nullptr : &it->second;
}

// Once the inner request is inactive (completed, failed or cancelled), so is the outer one.
void HostDeviceComm::Forget(Request& request) {
  Inner* inner = Find(request);
  if (inner == nullptr || inner->request.active()) return;
  requests_.erase(RequestId(request));
  Deactivate(request);
}

StatusOr<Request> HostDeviceComm::Isend(std::span<const float> data, int dest, int tag) {
  Comm& comm = For(data.data(), data.size());
  return Wrap(comm.Isend(data, dest, tag), &comm);
}

StatusOr<Request> HostDeviceComm::Irecv(std::span<float> data, int source, int tag) {
  Comm& comm = For(data.data(), data.size());
  return Wrap(comm.Irecv(data, source, tag), &comm);
}

Status HostDeviceComm::Wait(Request& request, std::chrono::milliseconds timeout) {
  if (!request.active()) return Status::Ok();
  Inner* inner = Find(request);
  if (inner == nullptr) return comm_internal::UnknownRequestError("Wait");
  Status status = inner->comm->Wait(inner->request, timeout);
  Forget(request);
  return status;
}

StatusOr<bool> HostDeviceComm::Test(Request& request) {
  if (!request.active()) return true;
  Inner* inner = Find(request);
  if (inner == nullptr) return comm_internal::UnknownRequestError("Test");
  StatusOr<bool> done = inner->comm->Test(inner->request);
  Forget(request);
  return done;
}

Status HostDeviceComm::Cancel(Request& request) {
  if (!request.active()) return Status::Ok();
  Inner* inner = Find(request);
  if (inner == nullptr) return comm_internal::UnknownRequestError("Cancel");
  Status status = inner->comm->Cancel(inner->request);
  Forget(request);
  return status;
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
  return Wrap(comm.StartAllReduceSum(data), &comm);
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
