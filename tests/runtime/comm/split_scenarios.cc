// Split scenarios: sub-communicators for the groups of a RankMap, reordered and nested ones,
// each checked with collectives inside it.
#include <gmock/gmock.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <tuple>
#include <utility>

#include "core/rank_map.h"
#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/comm/scenario_functions.h"

namespace trident::comm_scenarios {
namespace {

using ::testing::HasSubstr;

// Rank maps with `size` ranks: (tp, replicas per pipeline position).
std::vector<RankMap> MapsOfSize(int size) {
  const std::vector<std::tuple<int, int, std::vector<int>>> shapes = {
      {1, 1, {1}},    {2, 1, {1}},    {1, 1, {2, 1}}, {2, 1, {2}}, {2, 1, {1, 1}},
      {1, 1, {2, 2}}, {1, 1, {size}}, {1, 2, {1}},    {1, 2, {2}}, {2, 2, {1}}};
  std::vector<RankMap> maps;
  for (const auto& [tp, cp, replicas] : shapes) {
    StatusOr<RankMap> map = RankMap::Create(tp, cp, replicas);
    if (!map.ok() || map->NumRanks() != size) continue;
    if (std::find(maps.begin(), maps.end(), *map) == maps.end()) maps.push_back(*map);
  }
  return maps;
}

std::vector<float> Concatenated(const std::vector<int>& ranks, int count, int salt) {
  std::vector<float> all;
  for (int r : ranks) {
    std::vector<float> block = Values(r, count, salt);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

// Runs AllReduceSum, AllGather and Broadcast in `sub`, the group `ranks` of `comm`.
void CheckCollectivesInGroup(Comm& comm, Comm& sub, const std::vector<int>& ranks, int salt) {
  int index = static_cast<int>(std::find(ranks.begin(), ranks.end(), comm.Rank()) - ranks.begin());
  ASSERT_EQ(sub.Size(), static_cast<int>(ranks.size()));
  EXPECT_EQ(sub.Rank(), index);
  std::vector<float> data = Values(comm.Rank(), 11, salt);
  COMM_ASSERT_OK(sub.AllReduceSum(data));
  EXPECT_EQ(data, SumOfValues(ranks, 11, salt));
  std::vector<float> send = Values(comm.Rank(), 3, salt);
  std::vector<float> gathered(3 * ranks.size());
  COMM_ASSERT_OK(sub.AllGather(send, gathered));
  EXPECT_EQ(gathered, Concatenated(ranks, 3, salt));
  int root = sub.Size() - 1;
  std::vector<float> broadcast = Values(comm.Rank(), 4, salt);
  COMM_ASSERT_OK(sub.Broadcast(broadcast, root));
  EXPECT_EQ(broadcast, Values(ranks[root], 4, salt));
}

void SplitAndCheck(Comm& comm, const std::vector<int>& ranks, int salt) {
  COMM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Comm> sub, comm.Split(ranks));
  CheckCollectivesInGroup(comm, *sub, ranks, salt);
}

}  // namespace

void SplitTpCpAndGradGroups(Comm& comm) {
  std::vector<RankMap> maps = MapsOfSize(comm.Size());
  ASSERT_FALSE(maps.empty());
  for (const RankMap& map : maps) {
    SCOPED_TRACE("tp " + std::to_string(map.Tp()) + ", cp " + std::to_string(map.Cp()) +
                 ", positions " + std::to_string(map.NumPositions()));
    SplitAndCheck(comm, map.TpGroup(comm.Rank()), 1);
    SplitAndCheck(comm, map.CpGroup(comm.Rank()), 2);
    SplitAndCheck(comm, map.GradGroup(comm.Rank()), 3);
  }
}

void SplitReversedOrder(Comm& comm) {
  std::vector<int> ranks(comm.Size());
  std::iota(ranks.rbegin(), ranks.rend(), 0);  // Size()-1, ..., 0
  COMM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Comm> reversed, comm.Split(ranks));
  EXPECT_EQ(reversed->Rank(), comm.Size() - 1 - comm.Rank());
  CheckCollectivesInGroup(comm, *reversed, ranks, 3);
}

void SplitIsolatesMessages(Comm& comm) {
  // The same ranks and the same tag in the parent and in a sub-communicator: the message sent
  // first, in the parent, must not match the receive posted in the sub-communicator.
  std::vector<int> ranks(comm.Size());
  std::iota(ranks.begin(), ranks.end(), 0);
  COMM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Comm> sub, comm.Split(ranks));
  std::vector<float> to_parent = Values(comm.Rank(), 2, 40);
  std::vector<float> to_sub = Values(comm.Rank(), 2, 50);
  COMM_ASSERT_OK_AND_ASSIGN(Request parent_send, comm.Isend(to_parent, Next(comm), 5));
  COMM_ASSERT_OK_AND_ASSIGN(Request sub_send, sub->Isend(to_sub, Next(*sub), 5));
  std::vector<float> from_sub(2);
  std::vector<float> from_parent(2);
  COMM_ASSERT_OK_AND_ASSIGN(Request sub_recv, sub->Irecv(from_sub, Prev(*sub), 5));
  COMM_ASSERT_OK(sub->Wait(sub_recv, kMustComplete));
  COMM_ASSERT_OK_AND_ASSIGN(Request parent_recv, comm.Irecv(from_parent, Prev(comm), 5));
  COMM_ASSERT_OK(comm.Wait(parent_recv, kMustComplete));
  EXPECT_EQ(from_sub, Values(Prev(comm), 2, 50));
  EXPECT_EQ(from_parent, Values(Prev(comm), 2, 40));
  // A request belongs to the communicator that made it.
  EXPECT_EQ(comm.Wait(sub_send, kMustComplete).code(), StatusCode::kInvalidArgument);
  COMM_ASSERT_OK(sub->Wait(sub_send, kMustComplete));
  COMM_ASSERT_OK(comm.Wait(parent_send, kMustComplete));
}

void NestedSplit(Comm& comm) {
  // Halves of the communicator, then each half reversed, then a ReduceScatterSum inside.
  int half = (comm.Size() + 1) / 2;
  bool first = comm.Rank() < half;
  std::vector<int> ranks(first ? half : comm.Size() - half);
  std::iota(ranks.begin(), ranks.end(), first ? 0 : half);
  COMM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Comm> halves, comm.Split(ranks));
  std::vector<int> reversed(halves->Size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  COMM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Comm> inner, halves->Split(reversed));
  std::vector<int> world_ranks(ranks.rbegin(), ranks.rend());  // of inner's ranks
  CheckCollectivesInGroup(comm, *inner, world_ranks, 4);
  const int total = 2 * inner->Size();
  std::vector<float> send = Values(comm.Rank(), total, 60);
  std::vector<float> recv(2);
  COMM_ASSERT_OK(inner->ReduceScatterSum(send, recv));
  std::vector<float> sum = SumOfValues(world_ranks, total, 60);
  EXPECT_EQ(recv, std::vector<float>(sum.begin() + 2 * inner->Rank(),
                                     sum.begin() + 2 * inner->Rank() + 2));
}

void SplitRejectsBadLists(Comm& comm) {
  auto message = [&](std::vector<int> ranks) {
    StatusOr<std::unique_ptr<Comm>> sub = comm.Split(std::move(ranks));
    EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument);
    return sub.status().message();
  };
  EXPECT_THAT(message({}), HasSubstr("empty"));
  EXPECT_THAT(message({comm.Rank(), comm.Rank()}), HasSubstr("appears twice"));
  EXPECT_THAT(message({comm.Rank(), comm.Size()}), HasSubstr("is not a rank"));
  if (comm.Size() > 1) {
    EXPECT_THAT(message({Next(comm)}), HasSubstr("does not contain the calling rank"));
  }
  // The communicator is still fine.
  COMM_ASSERT_OK(comm.Barrier());
}

}  // namespace trident::comm_scenarios
