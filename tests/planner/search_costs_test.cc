// The partition DP's costs of a search configuration (planner/search_costs.h): StageMsBelow
// keeps the contract of PartitionCosts (StageMs below the limit, bit for bit; at least the
// limit otherwise), and the costs the schedules and levels of a mesh share are those each
// would compute alone, on every stage of real configurations, at every sharding level, with
// stages that do and do not fit in memory.
#include "planner/search_costs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "planner/stage_costs.h"
#include "planner_fixture.h"

namespace trident::search_internal {
namespace {

// Limits around `ms` and far from it: every side of every comparison StageMsBelow makes.
std::vector<double> LimitsAround(double ms) {
  std::vector<double> limits = {0.0, kInf, 1e-3, 1e6};
  if (std::isfinite(ms)) {
    for (double limit : {ms, std::nextafter(ms, 0.0), std::nextafter(ms, kInf), ms / 2, ms * 2}) {
      limits.push_back(limit);
    }
  }
  return limits;
}

// Every stage [first, last] at every position of a uniform DP of `c`, at every limit.
void ExpectBelowKeepsTheContract(const CostModel& model, const StageCosts& sc, const Config& c,
                                 int64_t memory_limit, SharedCosts* shared, int* infeasible) {
  const DpCosts costs(model, sc, c, memory_limit, shared);
  const DpCosts alone(model, sc, c, memory_limit);  // nothing shared
  const int num_stages = c.pp * c.v;
  for (int k = 0; k < num_stages; ++k) {
    for (int first = 0; first < sc.NumLayers(); ++first) {
      for (int last = first; last < sc.NumLayers(); ++last) {
        const double ms = costs.StageMs(first, last, c.dp, k * c.dp, k, num_stages);
        EXPECT_EQ(ms, alone.StageMs(first, last, c.dp, k * c.dp, k, num_stages));
        *infeasible += ms == kInf ? 1 : 0;
        for (double limit : LimitsAround(ms)) {
          const double below =
              costs.StageMsBelow(first, last, c.dp, k * c.dp, k, num_stages, limit);
          if (ms < limit) {
            EXPECT_EQ(below, ms) << Describe(c) << " [" << first << ", " << last << "] stage " << k;
          } else {
            EXPECT_GE(below, limit)
                << Describe(c) << " [" << first << ", " << last << "] stage " << k;
          }
        }
      }
    }
  }
}

TEST(DpCosts, StageMsBelowIsStageMsUnderTheLimitAndAtLeastTheLimitOtherwise) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  const CostModel& model = *f->costs;
  const StageCosts sc = *StageCosts::Create(model, 1, 2, true, 1, RecomputeMode::kNone);
  int infeasible = 0, stages = 0;
  for (int pp : {1, 2, 4}) {
    SharedCosts shared(sc);  // shared by the schedules and levels of a mesh, as in the search
    for (ScheduleKind schedule : {ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B}) {
      for (DpSharding level :
           {DpSharding::kNone, DpSharding::kOptimizer, DpSharding::kGradients, DpSharding::kFull}) {
        Config c;
        c.tp = 2;
        c.sp = true;
        c.pp = pp;
        c.dp = 8 / pp;
        c.v = schedule == ScheduleKind::kInterleaved1F1B ? 2 : 1;
        c.schedule = schedule;
        c.sharding = level;
        c.micro_batches = 32;
        // A limit some long stages exceed: both sides of the memory check.
        for (int64_t limit_gib : {12, 80}) {
          ExpectBelowKeepsTheContract(model, sc, c, limit_gib << 30, &shared, &infeasible);
          ExpectBelowKeepsTheContract(model, sc, c, limit_gib << 30, nullptr, &infeasible);
          stages += 2 * c.pp * c.v * sc.NumLayers() * (sc.NumLayers() + 1) / 2;
        }
      }
    }
  }
  EXPECT_GT(infeasible, stages / 20);
  EXPECT_LT(infeasible, stages * 19 / 20);
}

}  // namespace
}  // namespace trident::search_internal
