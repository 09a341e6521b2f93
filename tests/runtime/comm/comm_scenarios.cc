#include "tests/runtime/comm/comm_scenarios.h"

#include <cmath>
#include <numeric>
#include <ostream>

#include "tests/runtime/comm/scenario_functions.h"

namespace trident::comm_scenarios {
namespace {

thread_local bool failed_on_this_thread = false;

// Sees every assertion result on the thread that reported it.
class ThreadFailureListener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) failed_on_this_thread = true;
  }
};

}  // namespace

float TestValue(int rank, int index) {
  return static_cast<float>((rank + 1) * (index % 7 - 3)) * std::ldexp(1.0f, index % 5 - 2);
}

std::vector<float> Values(int rank, int count, int salt) {
  std::vector<float> values(count);
  for (int i = 0; i < count; ++i) values[i] = TestValue(rank, salt + i);
  return values;
}

std::vector<float> SumOfValues(const std::vector<int>& ranks, int count, int salt) {
  std::vector<double> sum(count, 0.0);
  for (int r : ranks) {
    for (int i = 0; i < count; ++i) sum[i] += TestValue(r, salt + i);
  }
  return std::vector<float>(sum.begin(), sum.end());
}

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.name; }

std::vector<int> AllRanks(const Comm& comm) {
  std::vector<int> ranks(comm.Size());
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

const std::vector<Scenario>& AllScenarios() {
  static const std::vector<Scenario> scenarios = {
      {"SendRecvOutOfOrderTags", SendRecvOutOfOrderTags},
      {"SameTagKeepsOrder", SameTagKeepsOrder},
      {"LargeMessage", LargeMessage},
      {"WaitTimesOut", WaitTimesOut},
      {"TestPollsUntilComplete", TestPollsUntilComplete},
      {"MessageSizeMismatch", MessageSizeMismatch},
      {"RejectsBadArguments", RejectsBadArguments},
      {"AllReduceSum", AllReduceSum},
      {"AllGather", AllGather},
      {"ReduceScatterSum", ReduceScatterSum},
      {"BroadcastFromEveryRoot", BroadcastFromEveryRoot},
      {"BarrierWaitsForLateRank", BarrierWaitsForLateRank},
      {"StartedAllReduceSumMatchesBlocking", StartedAllReduceSumMatchesBlocking},
      {"StartedReduceScatterMatchesBlocking", StartedReduceScatterMatchesBlocking},
      {"StartedReduceScatterChecksSizes", StartedReduceScatterChecksSizes},
      {"StartedAllReducesCompleteInReverseOrder", StartedAllReducesCompleteInReverseOrder},
      {"StartDoesNotWaitForPeers", StartDoesNotWaitForPeers},
      {"StartedAllReduceOverlapsP2p", StartedAllReduceOverlapsP2p},
      {"TestPollsStartedAllReduce", TestPollsStartedAllReduce},
      {"StartedAllReduceWaitTimesOut", StartedAllReduceWaitTimesOut},
      {"CancelRefusesStartedAllReduce", CancelRefusesStartedAllReduce},
      {"Bf16SendRecv", Bf16SendRecv},
      {"Bf16Collectives", Bf16Collectives},
      {"Bf16SumRounds", Bf16SumRounds},
      {"Bf16TypeMismatch", Bf16TypeMismatch},
      {"SplitTpCpAndGradGroups", SplitTpCpAndGradGroups},
      {"SplitReversedOrder", SplitReversedOrder},
      {"SplitIsolatesMessages", SplitIsolatesMessages},
      {"NestedSplit", NestedSplit},
      {"SplitRejectsBadLists", SplitRejectsBadLists},
  };
  return scenarios;
}

bool TakeThreadFailure() {
  bool failed = failed_on_this_thread;
  failed_on_this_thread = false;
  return failed;
}

void InstallThreadFailureListener() {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ThreadFailureListener);
}

}  // namespace trident::comm_scenarios
