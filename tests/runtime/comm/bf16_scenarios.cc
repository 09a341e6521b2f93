// bf16 scenarios: the same transfers and collectives on bf16 buffers (Wire{.., kBf16}). The test
// values and their sums over a few ranks need at most 6 significant bits, so bf16 holds them and
// every result is compared exactly; one sum that bf16 cannot hold shows the rounding.
#include <gmock/gmock.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/comm/scenario_functions.h"

namespace trident::comm_scenarios {
namespace {

using ::testing::HasSubstr;

std::vector<uint16_t> ToBits(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = ToBf16(values[i]);
  return bits;
}

Wire Bf16(std::vector<uint16_t>& bits) { return Wire(bits.data(), bits.size(), WireType::kBf16); }

}  // namespace

void Bf16SendRecv(Comm& comm) {
  std::vector<uint16_t> out = ToBits(Values(comm.Rank(), 33, 7));
  std::vector<uint16_t> in(33, 0xffff);
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(Bf16(in), Prev(comm), 2));
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(Bf16(out), Next(comm), 2));
  COMM_ASSERT_OK(comm.Wait(recv, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
  EXPECT_EQ(in, ToBits(Values(Prev(comm), 33, 7)));
}

void Bf16Collectives(Comm& comm) {
  constexpr int kBlock = 6;
  const int total = kBlock * comm.Size();
  std::vector<uint16_t> data = ToBits(Values(comm.Rank(), total, 1));
  COMM_ASSERT_OK(comm.AllReduceSum(Bf16(data)));
  const std::vector<uint16_t> sum = ToBits(SumOfValues(AllRanks(comm), total, 1));
  EXPECT_EQ(data, sum) << "AllReduceSum";

  std::vector<uint16_t> started = ToBits(Values(comm.Rank(), total, 1));
  COMM_ASSERT_OK_AND_ASSIGN(Request request, comm.StartAllReduceSum(Bf16(started)));
  COMM_ASSERT_OK(comm.Wait(request, kMustComplete));
  EXPECT_EQ(started, sum) << "StartAllReduceSum";

  std::vector<uint16_t> send = ToBits(Values(comm.Rank(), total, 1));
  std::vector<uint16_t> mine(kBlock, 0xffff);
  COMM_ASSERT_OK(comm.ReduceScatterSum(Bf16(send), Bf16(mine)));
  EXPECT_EQ(mine, std::vector<uint16_t>(sum.begin() + kBlock * comm.Rank(),
                                        sum.begin() + kBlock * (comm.Rank() + 1)))
      << "ReduceScatterSum";

  std::vector<uint16_t> all(total, 0xffff);
  COMM_ASSERT_OK(comm.AllGather(Bf16(mine), Bf16(all)));
  EXPECT_EQ(all, sum) << "AllGather of the reduce-scattered blocks";

  std::vector<uint16_t> root_data =
      comm.Rank() == 0 ? ToBits(Values(0, 9, 4)) : std::vector<uint16_t>(9, 0xffff);
  COMM_ASSERT_OK(comm.Broadcast(Bf16(root_data), 0));
  EXPECT_EQ(root_data, ToBits(Values(0, 9, 4))) << "Broadcast";
}

// 256 on rank 0 and 1 on the last rank (0 elsewhere): every order of adding gives 257, which
// bf16 rounds to 256 (ties to even); an fp32 sum keeps 257.
void Bf16SumRounds(Comm& comm) {
  if (comm.Size() < 2) return;
  const float mine = comm.Rank() == 0 ? 256.0f : comm.Rank() == comm.Size() - 1 ? 1.0f : 0.0f;
  std::vector<uint16_t> bits = {ToBf16(mine)};
  COMM_ASSERT_OK(comm.AllReduceSum(Bf16(bits)));
  EXPECT_EQ(FromBf16(bits[0]), 256.0f);
  std::vector<float> fp32 = {mine};
  COMM_ASSERT_OK(comm.AllReduceSum(fp32));
  EXPECT_EQ(fp32[0], 257.0f);
}

// A bf16 message into an fp32 buffer of the same count, and a gather between the two types:
// InvalidArgument, as a size mismatch is.
void Bf16TypeMismatch(Comm& comm) {
  std::vector<uint16_t> out = ToBits(Values(comm.Rank(), 4));
  std::vector<float> in(4);
  COMM_ASSERT_OK_AND_ASSIGN(Request send, comm.Isend(Bf16(out), Next(comm), 9));
  COMM_ASSERT_OK_AND_ASSIGN(Request recv, comm.Irecv(in, Prev(comm), 9));
  Status status = comm.Wait(recv, kMustComplete);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  COMM_ASSERT_OK(comm.Wait(send, kMustComplete));
  std::vector<float> gathered(4 * comm.Size());
  status = comm.AllGather(Bf16(out), gathered);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("send holds 4 bf16 values but recv"));
  COMM_ASSERT_OK(comm.Barrier());
}

}  // namespace trident::comm_scenarios
