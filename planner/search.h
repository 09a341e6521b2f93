// The planner's search: the outer loop over tp (with or without sequence parallelism), cp, pp, dp,
// micro-batch size, schedule (with its virtual stages), recompute and the data-parallel sharding
// level with its shard groups; for each, the partition DP (planner/partition.h) chooses the stage
// cuts (and, for small meshes, per-stage replication) that minimize the slowest stage subject to
// every position's memory; a closed-form estimate ranks them and the best candidates are
// re-ranked by simulating their exact schedules (planner/evaluate.h). It runs as steps:
// enumerate (planner/search_space.h), score (planner/search_score.h), rank, and with `exact`
// refine (planner/exact_partitions.h). Ties break deterministically: the smaller (step time,
// peak memory, cp, tp, sequence parallelism (off first), pp, micro-batch, schedule, virtual
// stages, recompute, sharding level, shard group, cuts) wins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/plan.h"
#include "planner/cost_model.h"
#include "planner/evaluate.h"

namespace trident {

struct SearchConstraints {
  std::optional<int> tp, pp, dp, micro_batch;
  std::vector<ScheduleKind> schedules;   // empty: every synchronous schedule (not PipeDream,
                                         // whose asynchronous updates change the training)
  std::vector<RecomputeMode> recompute;  // empty: none, selective (not under flash), full
  // Data-parallel sharding levels; empty: none and optimizer, what the runtime executes. A
  // level other than none is tried only where dp > 1.
  std::vector<DpSharding> dp_sharding;
  // Replicas of a shard group (Plan::dp_shard; dp itself: no hybrid): only sharded levels,
  // only meshes whose dp it divides. Unset: the search's shard groups.
  std::optional<int> dp_shard;
  bool hybrid = true;  // also shard groups of fewer than dp replicas (uniform replication only)
  // Sequence parallelism where tp > 1 (tp 1 never has it); unset: both.
  std::optional<bool> sequence_parallel;
  // Context-parallel degree; unset: every cp of the cost model whose 2·cp divides seq_len.
  std::optional<int> cp;
  int64_t max_memory_bytes = 0;  // 0: the device's memory
  std::vector<int> cuts;         // first layer of each stage; only evaluated
  // Replicas of each pipeline position (v = 1 unless every count is equal); empty: searched.
  // Their sum is the tp · cp groups: the devices / (tp · cp) of every mesh tried.
  std::vector<int> replicas;
  int max_virtual_stages = 4;
  bool replicate_stages = true;  // also search per-stage replication
  // Also enumerate, for every configuration with one stage per position (not interleaved),
  // every partition whose lower bound beats the best plan found (planner/exact_partitions.h):
  // the fastest simulated step of that space, at a cost that grows with the near-optimal
  // partitions (seconds on tens of devices, far more on large meshes).
  bool exact = false;
};

struct SearchRequest {
  ModelSpec model;
  std::string cluster_name;
  int devices = 0;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  DType dtype = DType::kBf16;
  SearchConstraints constraints;
  int runners_up = 5;
  int rerank = 24;  // candidates simulated exactly, of uniform and of per-stage replication each
};

struct Candidate {
  Plan plan;  // with its predictions recorded
  Evaluation evaluation;
};

struct SearchResult {
  std::vector<Candidate> ranked;  // best first: the plan and up to `runners_up` others
  int64_t configurations = 0;     // outer-loop points tried
  int64_t infeasible = 0;         // of which nothing fit in memory
  int64_t exact_branches = 0;     // with `exact`: partial partitions enumerated
  int64_t exact_simulated = 0;    // and whole ones simulated (their bound beat the best)
  // When nothing fits: the least peak memory any configuration needs, and that configuration.
  int64_t least_memory_bytes = 0;
  std::string least_memory_config;
};

// InvalidArgument for impossible requests (devices not a multiple of the constraints, a
// global batch no micro-batch size divides, bad cuts); Infeasible, with the shortfall and a
// suggestion, when no configuration fits in memory.
StatusOr<SearchResult> SearchPlans(const CostModel& costs, const SearchRequest& request);

}  // namespace trident
