// The second step of the search (planner/search.h): each group of configurations
// (planner/search_space.h) scored. For each configuration the partition DP (planner/partition.h)
// chooses the stage cuts (and, for per-stage replication, the replicas) that minimize the
// slowest stage subject to every position's memory, and the closed-form estimate
// (planner/search_estimate.h) scores the partition; with `exact`, each configuration also
// yields the space of partitions the exact step enumerates (planner/exact_partitions.h).
// Internal to the planner.
//
// What one group's scoring reads of the groups before it is explicit: the caches (stage costs,
// and the DP's bound from the latest partition of as many stages, which change no result) and
// the rank cutoff, the `rerank`-th best estimate so far: a configuration whose lower bound
// reaches it is not partitioned, as it could not be among the estimates re-ranked.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "planner/cost_model.h"
#include "planner/exact_bounds.h"
#include "planner/schedule_cache.h"
#include "planner/search.h"
#include "planner/search_costs.h"
#include "planner/search_space.h"
#include "planner/stage_costs.h"

namespace trident::search_internal {

// A partition the DP chose (or the user's cuts), with its closed-form step estimate.
struct Scored {
  Config config;
  std::vector<PlanStage> stages;
  double estimate_ms = kInf;
};

// What the search scores against: the cost model, the request and the memory limit.
struct ScoreInputs {
  const CostModel& costs;
  const SearchRequest& request;
  int64_t memory_limit = 0;
};

// What scoring found, in scoring order.
struct Scores {
  std::vector<Scored> scored;
  std::vector<PartitionSpace> spaces;  // with `exact`
  std::vector<Config> infeasible;      // configurations where nothing fit, for the message
  int64_t configurations = 0;          // configurations scored, per-stage partitions included
  int64_t infeasible_count = 0;        // of which nothing fit
  void Append(Scores other);
};

// The search's caches, which change no result. Stage costs of each (micro-batch size, tp,
// sequence parallelism, cp, recompute mode) are made once (null where StageCosts::Create
// fails); the spaces point into them, so the caches outlive the search's last step.
class ScoreCaches {
 public:
  explicit ScoreCaches(const CostModel& costs) : costs_(costs) {}
  const StageCosts* StageCostsFor(const Config& c);
  // By (stages, replicas): the stages the latest uniform DP chose, whose bottleneck bounds the
  // next DP of as many stages and replicas (planner/partition.h: exactly).
  std::vector<Stage>& LatestStages(int stages, int replicas) {
    return latest_stages_[{stages, replicas}];
  }
  // The schedules and lanes the simulations of the ranking and exact steps share.
  ScheduleCache* Schedules() { return &schedules_; }

 private:
  const CostModel& costs_;
  ScheduleCache schedules_;
  std::map<std::tuple<int, int, bool, int, RecomputeMode>, std::optional<StageCosts>> stage_costs_;
  std::map<std::pair<int, int>, std::vector<Stage>> latest_stages_;
};

// The `keep` best estimates so far (a max-heap).
class RankCutoff {
 public:
  explicit RankCutoff(int keep) : keep_(static_cast<size_t>(keep)) {}
  // Whether `keep` estimates are known and the worst of them is at most `lower_bound_ms`: then
  // a configuration with that lower bound cannot be among them.
  bool Reaches(double lower_bound_ms) const;
  void Add(double estimate_ms);

 private:
  size_t keep_;
  std::vector<double> best_;
};

// Every configuration of `group` scored: its partitions and their estimates (each added to
// `cutoff`), its exact space, or its infeasibility.
Scores ScoreGroup(const SearchGroup& group, const ScoreInputs& in, ScoreCaches* caches,
                  RankCutoff* cutoff);

}  // namespace trident::search_internal
