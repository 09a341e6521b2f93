// Collective scenarios: results compared exactly (==) with sums computed in double from the
// same exactly representable inputs.
#include <chrono>
#include <thread>

#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/comm/scenario_functions.h"

namespace trident::comm_scenarios {

void AllReduceSum(Comm& comm) {
  // An odd count, an empty buffer, and 64 Ki floats (large enough for MPI's segmented
  // algorithms).
  for (int count : {37, 0, 1 << 16}) {
    std::vector<float> data = Values(comm.Rank(), count, count);
    COMM_ASSERT_OK(comm.AllReduceSum(data));
    EXPECT_TRUE(data == SumOfValues(AllRanks(comm), count, count)) << count << " floats";
  }
}

void AllGather(Comm& comm) {
  constexpr int kBlock = 5;
  std::vector<float> send = Values(comm.Rank(), kBlock, 3);
  std::vector<float> recv(kBlock * comm.Size(), -1.0f);
  COMM_ASSERT_OK(comm.AllGather(send, recv));
  std::vector<float> expected;
  for (int r = 0; r < comm.Size(); ++r) {
    std::vector<float> block = Values(r, kBlock, 3);
    expected.insert(expected.end(), block.begin(), block.end());
  }
  EXPECT_EQ(recv, expected);
}

void ReduceScatterSum(Comm& comm) {
  constexpr int kBlock = 6;
  const int total = kBlock * comm.Size();
  std::vector<float> send = Values(comm.Rank(), total, 5);
  std::vector<float> recv(kBlock, -1.0f);
  COMM_ASSERT_OK(comm.ReduceScatterSum(send, recv));
  std::vector<float> sum = SumOfValues(AllRanks(comm), total, 5);
  std::vector<float> expected(sum.begin() + kBlock * comm.Rank(),
                              sum.begin() + kBlock * (comm.Rank() + 1));
  EXPECT_EQ(recv, expected);
}

void BroadcastFromEveryRoot(Comm& comm) {
  constexpr int kCount = 9;
  for (int root = 0; root < comm.Size(); ++root) {
    std::vector<float> data =
        comm.Rank() == root ? Values(root, kCount, 20 + root) : std::vector<float>(kCount, -1.0f);
    COMM_ASSERT_OK(comm.Broadcast(data, root));
    EXPECT_EQ(data, Values(root, kCount, 20 + root)) << "root " << root;
  }
}

void BarrierWaitsForLateRank(Comm& comm) {
  // The last rank enters 200 ms late; nobody may leave before it enters. The bound checked is
  // half that, for ranks that left the first barrier later than the late rank did.
  constexpr auto kLate = std::chrono::milliseconds(200);
  COMM_ASSERT_OK(comm.Barrier());
  bool late = comm.Rank() == comm.Size() - 1;
  if (late) std::this_thread::sleep_for(kLate);
  auto start = std::chrono::steady_clock::now();
  COMM_ASSERT_OK(comm.Barrier());
  auto waited = std::chrono::steady_clock::now() - start;
  if (!late) {
    EXPECT_GE(waited, kLate / 2) << "rank " << comm.Rank() << " left the barrier early";
  }
}

}  // namespace trident::comm_scenarios
