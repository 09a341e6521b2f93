// The NCCL backend on GPUs: collectives, transfers, Split and argument checks on device
// buffers, under mpirun with 1 and 2 ranks (label gpu; the harness is tests/runtime/mpi_gtest).
// Each rank uses the GPU of its node-local rank and a stream of its own as the compute stream;
// buffers are filled and read on that stream, as the runtime's tensors are, so the tests also
// check that the backend orders its work after the compute stream's. Values are small integers:
// every summation order gives the same bits. Every GPU test skips, on every rank, when some
// rank has no GPU of its own.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "core/launcher_env.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/comm_factory.h"
#include "runtime/comm/nccl_comm.h"
#include "tests/runtime/mpi_gtest/mpi_gtest.h"

namespace trident {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kWait{10000};

// Set by NcclEnvironment for the tests (a test harness; the library itself has no globals).
struct Gpu {
  std::string skip_reason;  // non-empty: every GPU test skips with it
  std::string setup_error;  // non-empty: the world could not be made
  cudaStream_t compute = nullptr;
  std::unique_ptr<Comm> world;
};
Gpu gpu;

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : std::atoi(value);
}

int LocalRank() { return LaunchedLocalRank().value_or(0); }

// Why this rank cannot run the GPU tests, or "".
std::string LocalGpuProblem() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(error);
  }
  const int local_ranks = EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  if (count >= local_ranks) return "";
  return std::to_string(local_ranks) + " ranks on this node but " + std::to_string(count) +
         " GPU(s): each rank needs a GPU of its own";
}

std::string CudaError(const char* call, cudaError_t error) {
  return std::string(call) + ": " + cudaGetErrorString(error);
}

// Makes the NCCL world on the MPI world of the harness; the ranks first agree whether all of
// them have a GPU.
class NcclEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string problem = LocalGpuProblem();
    std::vector<float> lacking = {problem.empty() ? 0.0f : 1.0f};
    Status agreed = mpi_gtest::World().AllReduceSum(lacking);
    if (!agreed.ok()) {
      gpu.setup_error = "the ranks could not agree on their GPUs: " + agreed.ToString();
      return;
    }
    if (lacking[0] > 0) {
      gpu.skip_reason = problem.empty() ? "another rank has no GPU of its own" : problem;
      // ctest reports the run skipped on this line (SKIP_REGULAR_EXPRESSION).
      if (mpi_gtest::World().Rank() == 0)
        std::printf("NCCL GPU tests skipped: %s\n", gpu.skip_reason.c_str());
      return;
    }
    cudaError_t error = cudaSetDevice(LocalRank());
    if (error == cudaSuccess) {
      error = cudaStreamCreateWithFlags(&gpu.compute, cudaStreamNonBlocking);
    }
    if (error != cudaSuccess) {
      gpu.setup_error = CudaError("cudaSetDevice/cudaStreamCreateWithFlags", error);
      return;
    }
    StatusOr<std::unique_ptr<Comm>> world = MakeWorldComm(
        "nccl", CommOptions{.collective_timeout = kWait, .device_stream = gpu.compute});
    if (!world.ok()) {
      gpu.setup_error = world.status().ToString();
      return;
    }
    gpu.world = std::move(*world);
  }

  void TearDown() override {
    gpu.world.reset();
    if (gpu.compute != nullptr) (void)cudaStreamDestroy(gpu.compute);
    gpu.compute = nullptr;
  }
};

// `count` floats of device memory, written and read on the compute stream.
class DeviceFloats {
 public:
  explicit DeviceFloats(size_t count) : count_(count) {
    Expect("cudaMalloc", cudaMalloc(&data_, Bytes()));
  }
  // The upload is queued on the compute stream, not waited for: the backend must order its
  // work after it. `values` is kept until then.
  explicit DeviceFloats(std::vector<float> values) : DeviceFloats(values.size()) {
    uploaded_ = std::move(values);
    Expect("cudaMemcpyAsync",
           cudaMemcpyAsync(data_, uploaded_.data(), Bytes(), cudaMemcpyHostToDevice, gpu.compute));
  }
  ~DeviceFloats() {
    Expect("cudaStreamSynchronize", cudaStreamSynchronize(gpu.compute));
    Expect("cudaFree", cudaFree(data_));
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;

  std::span<float> span() { return {data_, count_}; }

  std::vector<float> Read() {
    std::vector<float> values(count_);
    Expect("cudaMemcpyAsync",
           cudaMemcpyAsync(values.data(), data_, Bytes(), cudaMemcpyDeviceToHost, gpu.compute));
    Expect("cudaStreamSynchronize", cudaStreamSynchronize(gpu.compute));
    return values;
  }

 private:
  size_t Bytes() const { return count_ * sizeof(float); }
  static void Expect(const char* call, cudaError_t error) {
    EXPECT_EQ(error, cudaSuccess) << CudaError(call, error);
  }

  size_t count_;
  float* data_ = nullptr;
  std::vector<float> uploaded_;
};

// "" when equal, else the first difference (whole vectors of a million floats would not help).
std::string FirstDifference(const std::vector<float>& got, const std::vector<float>& expected) {
  if (got.size() != expected.size()) {
    return std::to_string(got.size()) + " floats, expected " + std::to_string(expected.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;
    return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
           std::to_string(expected[i]);
  }
  return "";
}

std::vector<float> Values(size_t count, const std::function<float(size_t)>& value) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = value(i);
  return values;
}

float F(size_t i) { return static_cast<float>(i); }

// Every GPU test: skips on every rank without GPUs, and ends with the ranks' agreement.
class NcclCommTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu.skip_reason.empty()) GTEST_SKIP() << gpu.skip_reason;
    ASSERT_NE(gpu.world, nullptr) << gpu.setup_error;
  }
  void TearDown() override {
    if (!IsSkipped()) mpi_gtest::AgreeOnFailure(HasFailure());
  }

  Comm& world() { return *gpu.world; }
  int rank() { return world().Rank(); }
  int size() { return world().Size(); }
  // This rank's partner in crossing exchanges: 0-1, 2-3, ...; itself when it has none.
  int Partner() { return (rank() ^ 1) < size() ? rank() ^ 1 : rank(); }
};

TEST_F(NcclCommTest, AllReduceSumAddsEveryRanksData) {
  const size_t count = size_t{1} << 20;  // large: NCCL splits it, and the upload takes a while
  const float r = F(rank()), n = F(size());
  DeviceFloats data(Values(count, [&](size_t i) { return F(i % 8) + r; }));
  Status status = world().AllReduceSum(data.span());
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::vector<float> expected =
      Values(count, [&](size_t i) { return n * F(i % 8) + n * (n - 1) / 2; });
  EXPECT_EQ(FirstDifference(data.Read(), expected), "");
}

TEST_F(NcclCommTest, AllGatherConcatenatesInRankOrder) {
  DeviceFloats send(Values(3, [&](size_t i) { return 100 * F(rank()) + F(i); }));
  DeviceFloats recv(3 * static_cast<size_t>(size()));
  Status status = world().AllGather(send.span(), recv.span());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(recv.Read(),
            Values(recv.span().size(), [](size_t j) { return 100 * F(j / 3) + F(j % 3); }));
}

TEST_F(NcclCommTest, ReduceScatterSumLeavesEachRankItsBlock) {
  const float r = F(rank()), n = F(size());
  DeviceFloats send(Values(2 * static_cast<size_t>(size()), [&](size_t j) { return r + F(j); }));
  DeviceFloats recv(2);
  Status status = world().ReduceScatterSum(send.span(), recv.span());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(recv.Read(), Values(2, [&](size_t i) { return n * (n - 1) / 2 + n * (2 * r + F(i)); }));
}

TEST_F(NcclCommTest, BroadcastCopiesTheRootsData) {
  const int root = size() - 1;
  DeviceFloats data(Values(5, [&](size_t i) { return rank() == root ? 7 + F(i) : -1.0f; }));
  Status status = world().Broadcast(data.span(), root);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(data.Read(), Values(5, [](size_t i) { return 7 + F(i); }));
}

TEST_F(NcclCommTest, StartedAllReducesCompleteThroughWaitAndTest) {
  const float r = F(rank()), n = F(size());
  DeviceFloats a(Values(4, [&](size_t) { return r + 1; }));
  DeviceFloats b(Values(4, [&](size_t i) { return 2 * r + F(i); }));
  StatusOr<Request> started_a = world().StartAllReduceSum(a.span());
  StatusOr<Request> started_b = world().StartAllReduceSum(b.span());
  ASSERT_TRUE(started_a.ok() && started_b.ok())
      << started_a.status().ToString() << " " << started_b.status().ToString();
  Status waited = world().Wait(*started_a, kWait);
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    StatusOr<bool> tested = world().Test(*started_b);
    ASSERT_TRUE(tested.ok()) << tested.status().ToString();
    done = *tested;
  }
  EXPECT_TRUE(done && !started_b->active());
  EXPECT_EQ(a.Read(), Values(4, [&](size_t) { return n * (n + 1) / 2; }));
  EXPECT_EQ(b.Read(), Values(4, [&](size_t i) { return n * (n - 1) + n * F(i); }));
}

TEST_F(NcclCommTest, RingOfTransfersPostedBeforeAnyWait) {
  const int next = (rank() + 1) % size();
  const int previous = (rank() + size() - 1) % size();
  DeviceFloats out(Values(6, [&](size_t i) { return 1000 * F(rank()) + F(i); }));
  DeviceFloats in(6);
  StatusOr<Request> send = world().Isend(out.span(), next, 7);
  StatusOr<Request> recv = world().Irecv(in.span(), previous, 7);
  ASSERT_TRUE(send.ok() && recv.ok())
      << send.status().ToString() << " " << recv.status().ToString();
  Status received = world().Wait(*recv, kWait);
  EXPECT_TRUE(received.ok()) << received.ToString();
  Status sent = world().Wait(*send, kWait);
  EXPECT_TRUE(sent.ok()) << sent.ToString();
  EXPECT_EQ(in.Read(), Values(6, [&](size_t i) { return 1000 * F(previous) + F(i); }));
}

// NCCL matches a pair's transfers in posting order: both directions at once, two messages each.
TEST_F(NcclCommTest, CrossingExchangesMatchInPostingOrder) {
  const int partner = Partner();
  DeviceFloats first_out(Values(3, [&](size_t i) { return 10 * F(rank()) + F(i); }));
  DeviceFloats second_out(Values(3, [&](size_t i) { return 100 + 10 * F(rank()) + F(i); }));
  DeviceFloats first_in(3);
  DeviceFloats second_in(3);
  std::vector<StatusOr<Request>> requests;
  requests.push_back(world().Irecv(first_in.span(), partner, 1));
  requests.push_back(world().Irecv(second_in.span(), partner, 2));
  requests.push_back(world().Isend(first_out.span(), partner, 1));
  requests.push_back(world().Isend(second_out.span(), partner, 2));
  for (auto it = requests.rbegin(); it != requests.rend(); ++it) {  // the sends first
    ASSERT_TRUE(it->ok()) << it->status().ToString();
    Status waited = world().Wait(**it, kWait);
    EXPECT_TRUE(waited.ok()) << waited.ToString();
  }
  EXPECT_EQ(first_in.Read(), Values(3, [&](size_t i) { return 10 * F(partner) + F(i); }));
  EXPECT_EQ(second_in.Read(), Values(3, [&](size_t i) { return 100 + 10 * F(partner) + F(i); }));
}

TEST_F(NcclCommTest, ZeroLengthCallsComplete) {
  std::span<float> empty;
  StatusOr<Request> send = world().Isend(empty, Partner(), 0);
  StatusOr<Request> recv = world().Irecv(empty, Partner(), 0);
  ASSERT_TRUE(send.ok() && recv.ok()) << send.status().ToString();
  EXPECT_TRUE(world().Wait(*recv, kWait).ok());
  EXPECT_TRUE(world().Wait(*send, kWait).ok());
  Status status = world().AllReduceSum(empty);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_F(NcclCommTest, SplitMakesAWorkingSubCommunicator) {
  std::vector<int> reversed(static_cast<size_t>(size()));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  StatusOr<std::unique_ptr<Comm>> sub = world().Split(reversed);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  Comm& comm = **sub;
  EXPECT_EQ(comm.Rank(), size() - 1 - rank());
  const float n = F(size());
  DeviceFloats data(Values(2, [&](size_t i) { return i == 0 ? F(comm.Rank()) + 1 : 1.0f; }));
  Status status = comm.AllReduceSum(data.span());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(data.Read(), (std::vector<float>{n * (n + 1) / 2, n}));
  DeviceFloats root_data(Values(3, [&](size_t i) { return comm.Rank() == 0 ? 5 + F(i) : 0.0f; }));
  status = comm.Broadcast(root_data.span(), 0);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(root_data.Read(), (std::vector<float>{5, 6, 7}));
  DeviceFloats world_data(Values(1, [](size_t) { return 1.0f; }));
  status = world().AllReduceSum(world_data.span());  // the parent still works
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(world_data.Read(), (std::vector<float>{n}));
}

TEST_F(NcclCommTest, SplitIntoSingleRanks) {
  StatusOr<std::unique_ptr<Comm>> alone = world().Split({rank()});
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ((*alone)->Size(), 1);
  DeviceFloats data(Values(2, [&](size_t i) { return F(rank()) + F(i); }));
  Status status = (*alone)->AllReduceSum(data.span());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(data.Read(), Values(2, [&](size_t i) { return F(rank()) + F(i); }));
}

// The world of MakeWorldComm("nccl") sends host buffers over MPI (host_device_comm.h); an
// NcclComm of its own refuses them.
TEST_F(NcclCommTest, HostMemoryGoesOverMpiAndNcclAloneRefusesIt) {
  std::vector<float> host(4, 1.0f);
  Status status = world().AllReduceSum(host);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(host, std::vector<float>(4, F(size())));
  StatusOr<std::unique_ptr<Comm>> mpi = MakeWorldComm("mpi");
  ASSERT_TRUE(mpi.ok()) << mpi.status().ToString();
  StatusOr<std::unique_ptr<Comm>> nccl = NcclComm::Create(
      std::move(*mpi), CommOptions{.collective_timeout = kWait, .device_stream = gpu.compute});
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  status = (*nccl)->AllReduceSum(host);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("AllReduceSum: data is host memory"), std::string::npos)
      << status.message();
  StatusOr<Request> send = (*nccl)->Isend(host, Partner(), 0);
  EXPECT_EQ(send.status().code(), StatusCode::kInvalidArgument) << send.status().ToString();
  EXPECT_NE(send.status().message().find("Isend: data is host memory"), std::string::npos);
  EXPECT_FALSE(IsCudaDeviceMemory(host.data()));
}

TEST_F(NcclCommTest, RefusesBadArguments) {
  DeviceFloats data(4);
  EXPECT_TRUE(IsCudaDeviceMemory(data.span().data()));
  StatusOr<Request> stray = world().Isend(data.span(), size(), 0);
  EXPECT_EQ(stray.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stray.status().message().find("is not a rank of this communicator"), std::string::npos);
  StatusOr<Request> tagged = world().Irecv(data.span(), Partner(), kMaxTag + 1);
  EXPECT_EQ(tagged.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(world().Barrier().ok());  // nothing reached NCCL; the world is fine
}

TEST_F(NcclCommTest, CancelWithdrawsAQueuedReceive) {
  DeviceFloats data(4);
  StatusOr<Request> recv = world().Irecv(data.span(), Partner(), 3);
  ASSERT_TRUE(recv.ok()) << recv.status().ToString();
  Status cancelled = world().Cancel(*recv);
  EXPECT_TRUE(cancelled.ok()) << cancelled.ToString();
  EXPECT_FALSE(recv->active());
  DeviceFloats one(Values(1, [](size_t) { return 1.0f; }));
  Status status = world().AllReduceSum(one.span());  // the withdrawn receive never launched
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(one.Read(), (std::vector<float>{F(size())}));
}

// Sends `value` to `peer` and returns the peer's, both directions at once.
float Exchange(Comm& comm, int peer, float value) {
  DeviceFloats out(Values(1, [&](size_t) { return value; }));
  DeviceFloats in(1);
  StatusOr<Request> recv = comm.Irecv(in.span(), peer, 0);
  StatusOr<Request> send = comm.Isend(out.span(), peer, 0);
  EXPECT_TRUE(recv.ok() && send.ok()) << recv.status().ToString() << send.status().ToString();
  if (!recv.ok() || !send.ok()) return -1;
  Status received = comm.Wait(*recv, kWait);
  Status sent = comm.Wait(*send, kWait);
  EXPECT_TRUE(received.ok() && sent.ok()) << received.ToString() << " " << sent.ToString();
  return in.Read()[0];
}

// A receive that no one sends times out and stays active; cancelling it, once launched, aborts
// the (sub-)communicator, which then refuses every call. The world is not affected. The pair
// exchanges first: NCCL connects a pair on its first transfers, in ncclGroupEnd, on the host,
// and only a connected pair's lone receive waits on the GPU.
TEST_F(NcclCommTest, CancellingALaunchedReceiveBreaksTheCommunicator) {
  if (size() < 2) GTEST_SKIP() << "needs a peer that does not send";
  if (rank() < 2) {  // only the listed ranks call Split
    StatusOr<std::unique_ptr<Comm>> sub = world().Split(std::vector<int>{0, 1});
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    const int peer = 1 - rank();
    EXPECT_EQ(Exchange(**sub, peer, F(rank())), F(peer));
    DeviceFloats data(4);  // before the receive: cudaMalloc may wait for running kernels
    StatusOr<Request> recv = (*sub)->Irecv(data.span(), peer, 9);
    ASSERT_TRUE(recv.ok()) << recv.status().ToString();
    Status waited = (*sub)->Wait(*recv, milliseconds(200));
    EXPECT_TRUE(IsCommTimeout(waited)) << waited.ToString();
    EXPECT_NE(waited.message().find("Wait: Irecv from rank"), std::string::npos);
    EXPECT_TRUE(recv->active());
    EXPECT_TRUE((*sub)->Cancel(*recv).ok());
    EXPECT_FALSE(recv->active());
    Status after = (*sub)->Barrier();
    EXPECT_EQ(after.code(), StatusCode::kFailedPrecondition) << after.ToString();
    EXPECT_NE(after.message().find("unusable after an earlier Cancel"), std::string::npos);
  }
  DeviceFloats one(Values(1, [](size_t) { return 1.0f; }));
  Status status = world().AllReduceSum(one.span());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(one.Read(), (std::vector<float>{F(size())}));
}

// Without a GPU too: the factory's checks.
TEST(NcclFactoryTest, NeedsTheComputeStream) {
  std::vector<std::string> kinds = WorldCommKinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "nccl"), kinds.end());
  StatusOr<std::unique_ptr<Comm>> comm = MakeWorldComm("nccl");
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(comm.status().message().find("needs CommOptions::device_stream"), std::string::npos)
      << comm.status().message();
  mpi_gtest::AgreeOnFailure(HasFailure());
}

}  // namespace
}  // namespace trident

int main(int argc, char** argv) {
  ::testing::AddGlobalTestEnvironment(new trident::NcclEnvironment);  // gtest owns it
  return trident::mpi_gtest::Main("nccl_comm_test", argc, argv);
}
