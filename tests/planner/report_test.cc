#include "planner/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trident {
namespace {

using ::testing::HasSubstr;

Plan Replicated(std::vector<int> replicas, int micro_batches) {
  Plan p;
  p.schedule = ScheduleKind::k1F1B;
  p.micro_batch_size = 1;
  p.num_micro_batches = micro_batches;
  int dp = 0;
  for (size_t s = 0; s < replicas.size(); ++s) {
    p.stages.push_back({static_cast<int>(s), 1, replicas[s], RecomputeMode::kNone, 0, 0});
    dp = std::max(dp, replicas[s]);
  }
  p.mesh = {dp, static_cast<int>(replicas.size()), 1};
  return p;
}

TEST(ConfigLine, MicroBatchesPerReplicaFollowRoundRobin) {
  EXPECT_THAT(ConfigLine(Replicated({16, 16}, 96 * 16)),
              HasSubstr("micro-batch 1 × 96 per replica"));
  // 1,536 over 81 replicas: 78 replicas take 19, three take 18.
  EXPECT_THAT(ConfigLine(Replicated({81, 81}, 1536)), HasSubstr("× 18-19 per replica"));
  // {3, 1} with 4: the first stage's replicas take 2, 1 and 1; the second stage's takes 4.
  const std::string mixed = ConfigLine(Replicated({3, 1}, 4));
  EXPECT_THAT(mixed, HasSubstr("× 1-4 per replica"));
  EXPECT_THAT(mixed, HasSubstr("per-stage replication"));
}

TEST(ConfigLine, NamesContextParallelismBetweenTpAndPp) {
  Plan p = Replicated({2, 2}, 8);
  EXPECT_THAT(ConfigLine(p), HasSubstr("tp 1 × pp 2 × dp 2"));
  p.mesh.cp = 4;
  EXPECT_THAT(ConfigLine(p), HasSubstr("tp 1 × cp 4 × pp 2 × dp 2"));
}

}  // namespace
}  // namespace trident
