// Comm: the communicator every rank of a running job talks through.
//
// One small interface with three backends: MPI (CPU jobs; mpi_comm.h), NCCL (GPU jobs;
// nccl_comm.h, behind HostDeviceComm, which sends host buffers over MPI) and in-process threads
// for unit tests (inprocess_comm.h). The runtime sees only `Comm`; it
// gets the world communicator from MakeWorldComm (comm_factory.h) and the tp, pp and dp groups
// of core/rank_map.h from Split. Communicators travel in the runtime's context object; there is
// no global one.
//
// Buffers are fp32 or bf16 elements (a Wire; float spans convert to one) in host memory for the
// MPI and in-process backends, in device memory for NCCL. A transfer, gather or broadcast moves
// the elements' bits; a bf16 sum adds in fp32 and rounds to bf16 (NCCL rounds after each step of
// its ring, MPI after each pairwise reduction, the in-process backend once). Every backend gives
// bit-identical results for exactly representable inputs (small integers times powers of two):
// then every summation order gives the same sum.
//
// Errors: argument errors are InvalidArgument, found before anything is sent, with the same
// message in every backend. A wait that passes its deadline returns DeadlineExceeded whose
// message names the operation (the peer and tag of a transfer, or the collective and its size)
// and how long it waited; IsCommTimeout() recognizes it. A rank that cannot go on calls
// AbortJob, which ends every process of the job so no peer waits for it.
//
// Thread-safety: a Comm is used by one thread at a time (MPI_THREAD_SERIALIZED). Different
// Comms, including the sub-communicators of one Comm, may be used from different threads only
// where the backend says so (the in-process backend: one thread per rank).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace trident {

// User tags are 0..kMaxTag; the backends reserve larger ones. MPI guarantees at least 32767.
inline constexpr int kMaxTag = 32000;

struct CommOptions {
  // How long a collective or a Split waits for the other ranks before it returns an error.
  // Point-to-point waits take their own timeout.
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
  // NCCL: the compute stream (Compute::device_stream(), a cudaStream_t) whose queued work every
  // transfer and collective is ordered after. Required by the NCCL backend; ignored by others.
  void* device_stream = nullptr;
};

// The element types a Comm moves: fp32, and bf16 (mixed precision's activations and values).
enum class WireType { kFp32, kBf16 };

// `count` elements of `type` at `data`. A send buffer is read only, though the pointer is not
// const (one type for both directions).
struct Wire {
  void* data = nullptr;
  size_t count = 0;
  WireType type = WireType::kFp32;

  Wire() = default;
  Wire(void* d, size_t n, WireType t) : data(d), count(n), type(t) {}
  // fp32 buffers convert implicitly, so a float span, vector or {pointer, count} is a Wire.
  Wire(float* d, size_t n) : data(d), count(n) {}
  Wire(const float* d, size_t n) : data(const_cast<float*>(d)), count(n) {}
  Wire(std::span<float> s) : Wire(s.data(), s.size()) {}
  Wire(std::span<const float> s) : Wire(s.data(), s.size()) {}
  Wire(std::vector<float>& v) : Wire(v.data(), v.size()) {}
  Wire(const std::vector<float>& v) : Wire(v.data(), v.size()) {}

  size_t bytes() const { return count * (type == WireType::kFp32 ? 4 : 2); }
  // "4 floats" / "4 bf16 values": the size in messages.
  std::string CountText() const;
  // " floats" / " bf16 values": the unit of a count of this buffer's elements.
  const char* Unit() const { return type == WireType::kFp32 ? " floats" : " bf16 values"; }
};

class Comm;
class RequestTableBase;

// A handle to one outstanding Isend, Irecv or started collective (StartAllReduceSum), valid
// only with the Comm that made it.
// Move-only; a moved-from or default-constructed Request is inactive, and Wait, Test and Cancel
// on it return ok at once (like MPI_REQUEST_NULL). A request becomes inactive when it
// completes, fails or is cancelled; it stays active after a Wait that timed out.
class Request {
 public:
  Request() = default;
  Request(Request&& other) noexcept { *this = std::move(other); }
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  bool active() const { return owner_ != nullptr; }

 private:
  friend class RequestTableBase;  // request_table.h: makes, finds and finishes requests
  Request(const Comm* owner, int64_t id) : owner_(owner), id_(id) {}

  const Comm* owner_ = nullptr;
  int64_t id_ = 0;
};

class Comm {
 public:
  // Withdraws pending receives and lets pending sends finish in the background. Started
  // collectives should be completed first (see StartAllReduceSum).
  virtual ~Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // This rank's index in the communicator, 0 <= Rank() < Size().
  virtual int Rank() const = 0;
  // Number of ranks in the communicator (>= 1).
  virtual int Size() const = 0;

  // Starts sending `data` to rank `dest` of this communicator with tag 0 <= tag <= kMaxTag.
  // REQUIRES: `data` stays valid and unchanged until the request completes. The send may
  // complete before the matching receive is posted (buffered) or only after it; callers must
  // not rely on either.
  virtual StatusOr<Request> Isend(Wire data, int dest, int tag) = 0;
  // Starts receiving one message from rank `source` with `tag` into `data`. Messages from one
  // source with one tag are received in the order they were sent (MPI's non-overtaking rule);
  // different tags may be received in any order. The message must hold exactly data.count
  // elements of data.type, otherwise the request fails with InvalidArgument.
  // REQUIRES: `data` stays valid and untouched until the request completes.
  virtual StatusOr<Request> Irecv(Wire data, int source, int tag) = 0;

  // Blocks until `request` completes (returns its status) or `timeout` passes (returns a
  // timeout error and leaves the request active: wait again, or Cancel it).
  virtual Status Wait(Request& request, std::chrono::milliseconds timeout) = 0;
  // Returns true and makes the request inactive if it has completed, false if not yet, or the
  // request's error.
  virtual StatusOr<bool> Test(Request& request) = 0;
  // Withdraws a pending receive; if it has already matched a message it completes normally
  // (the data is in its buffer). Either way the request becomes inactive. Sends and started
  // collectives cannot be cancelled (InvalidArgument; the request stays active).
  virtual Status Cancel(Request& request) = 0;

  // Collectives: every rank of the communicator calls the same collective, in the same order,
  // with the same sizes, element types (and root). Blocking and started collectives
  // (StartAllReduceSum) share one order: a rank's k-th collective call on a communicator, of either
  // kind, matches the k-th of every other rank, and must be the same call (a StartAllReduceSum
  // matches only a StartAllReduceSum). Split is not counted. Blocking collectives return when done
  // or when the collective timeout passes; after such a timeout the communicator is broken (every
  // later call fails) and the job should abort. The in-process backend sums in rank order,
  // ((x0 + x1) + x2) + ...; MPI and NCCL choose their own order, so backends agree bit for bit
  // when every order gives the same sum (exactly representable inputs), and up to
  // reassociation otherwise.

  // data := elementwise sum of every rank's data.
  virtual Status AllReduceSum(Wire data) = 0;
  // recv := rank 0's send, then rank 1's, ...   REQUIRES: recv.count == Size() * send.count,
  // one element type.
  virtual Status AllGather(Wire send, Wire recv) = 0;
  // recv := block Rank() of the elementwise sum of every rank's send, blocks being consecutive
  // recv.count elements.   REQUIRES: send.count == Size() * recv.count, one element type.
  virtual Status ReduceScatterSum(Wire send, Wire recv) = 0;
  // data := rank root's data.
  virtual Status Broadcast(Wire data, int root) = 0;
  // Returns once every rank has entered the barrier.
  virtual Status Barrier() = 0;

  // Starts data := elementwise sum of every rank's data, like AllReduceSum (same checks, same
  // result bits), and returns without waiting for the other ranks. Complete it with Wait or
  // Test; `data` holds the sum once the request completes, and every rank's request completes
  // only after every rank has started this all-reduce. Several may be outstanding at once, with
  // Isend/Irecv in flight too, and they may be completed in any order. A Wait that times out
  // leaves the request active and the communicator usable (its message names the all-reduce,
  // "AllReduceSum of 1024 floats"); Cancel refuses it, as for a send. Complete every started
  // collective before destroying the Comm (the MPI backend waits up to the collective timeout
  // for one still pending, then breaks off).
  // REQUIRES: `data` stays valid and untouched until the request completes.
  virtual StatusOr<Request> StartAllReduceSum(Wire data) = 0;
  // Starts recv := block Rank() of the elementwise sum of every rank's send, like
  // ReduceScatterSum (same checks, same result bits), and returns at once; complete it as a
  // StartAllReduceSum, with which it shares the rules above (it matches only a
  // StartReduceScatterSum; its message names "ReduceScatterSum of N floats", N = send.size()).
  // REQUIRES: send.count == Size() * recv.count; both stay valid and untouched until the
  // request completes.
  virtual StatusOr<Request> StartReduceScatterSum(Wire send, Wire recv) = 0;

  // A sub-communicator of the listed ranks of this communicator; rank i of the result is
  // ranks[i]. Every listed rank calls Split with the same list (the others do not call it), and
  // it blocks until they all have, or the collective timeout passes (then this communicator is
  // broken, as after a collective). Use it for the tp, pp and dp groups of a RankMap. The
  // result has its own message space (a tag used in it never matches one in the parent), the
  // same options, and may outlive this communicator.
  // Fails with InvalidArgument when the list is empty, repeats a rank, names a rank outside
  // 0..Size()-1 or does not contain Rank(). Lists that differ between the listed ranks are
  // InvalidArgument in the MPI backend when they share the first rank, a timeout otherwise.
  virtual StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) = 0;

  // Ends every process of the job at once with `exit_code`, for a rank that hit an error it
  // cannot recover from; its peers need not call anything. Never returns. Flushes stdout and
  // stderr first; print the reason before calling it. MPI: MPI_Abort on MPI_COMM_WORLD. The
  // in-process backend has one process and ends it (std::_Exit): every rank ends with it.
  [[noreturn]] virtual void AbortJob(int exit_code) = 0;
  // Logs `reason` as this rank's error (with the rank's identity, core/logging.h), then
  // AbortJob(1): what a rank does on an error its peers may be waiting behind.
  [[noreturn]] void FailJob(const Status& reason);

 protected:
  Comm() = default;
};

// True when `status` is the timeout error of a Wait, a collective or a Split.
bool IsCommTimeout(const Status& status);

}  // namespace trident
