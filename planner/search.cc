#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "core/text_format.h"
#include "core/version.h"
#include "planner/exact_partitions.h"
#include "planner/partition.h"
#include "planner/plan_request.h"
#include "planner/search_checks.h"
#include "planner/search_score.h"
#include "planner/search_space.h"

namespace trident {
namespace {

using search_internal::CheckCuts;
using search_internal::CheckReplicas;
using search_internal::Config;
using search_internal::DpCosts;
using search_internal::kInf;
using search_internal::PartitionSpace;
using search_internal::RankCutoff;
using search_internal::ScoreCaches;
using search_internal::Scored;
using search_internal::ScoreInputs;
using search_internal::Scores;
using search_internal::SearchedSchedules;
using search_internal::SearchGroup;

Status CheckRequest(const CostModel& costs, const SearchRequest& request) {
  const int64_t available = costs.TotalDevices();
  if (request.devices < 1 || request.devices > available) {
    return InvalidArgument("--devices " + std::to_string(request.devices) + ": the cluster " +
                           request.cluster_name + " has " + std::to_string(available) +
                           " devices; ask for at most that many or describe more nodes");
  }
  if (request.global_batch < 1 || request.seq_len < 1) {
    return InvalidArgument("--global-batch and --seq must be positive");
  }
  TRIDENT_RETURN_IF_ERROR(CheckCuts(request.constraints.cuts, request.model.NumLayers()));
  TRIDENT_RETURN_IF_ERROR(CheckReplicas(request.constraints, request.devices));
  if (costs.NumLayers() != request.model.NumLayers()) {
    return InvalidArgument("the profile has " + std::to_string(costs.NumLayers()) + " layers but " +
                           request.model.name + " has " +
                           std::to_string(request.model.NumLayers()) +
                           "; use a profile of this model, or plan analytically");
  }
  return Status::Ok();
}

Plan MakePlan(const ScoreInputs& in, const Scored& scored) {
  const Config& c = scored.config;
  Plan plan;
  CopyJobToPlan(in.request, &plan);
  plan.devices_per_node = in.costs.DevicesPerNode();
  plan.mesh = {c.dp, c.pp, c.tp, c.cp};
  plan.virtual_stages = c.v;
  plan.micro_batch_size = c.micro_batch;
  plan.num_micro_batches = c.micro_batches;
  plan.schedule = c.schedule;
  plan.dp_sharding = c.sharding;
  plan.dp_shard = c.shard;
  plan.sequence_parallel = c.sp;
  plan.stages = scored.stages;
  plan.provenance.planner_version = TridentBuild();
  return plan;
}

auto CandidateKey(const Candidate& c) {
  const Plan& p = c.plan;
  std::vector<int> cuts;
  for (const PlanStage& st : p.stages) cuts.push_back(st.first_layer);
  return std::tuple(c.evaluation.step_ms, c.evaluation.peak_memory_bytes, p.mesh.cp, p.mesh.tp,
                    p.sequence_parallel, p.mesh.pp, p.micro_batch_size, p.schedule,
                    p.virtual_stages, p.stages.front().recompute, p.dp_sharding, p.dp_shard, cuts);
}

std::string GiB(int64_t bytes) { return FormatBytes(static_cast<double>(bytes)); }

// Notes `peak_bytes` of the configuration `c` for the "nothing fits" message.
void NoteLeastMemory(const Config& c, int64_t peak_bytes, SearchResult* result) {
  if (result->least_memory_bytes == 0 || peak_bytes < result->least_memory_bytes) {
    result->least_memory_bytes = peak_bytes;
    result->least_memory_config = search_internal::Describe(c);
  }
}

// The plan of `scored` simulated without its timeline, with its predictions recorded; nullopt when
// it cannot run (Plan::Check, or replica counts whose lanes deadlock: PipeDream's round robin has
// no lowered warm-up, core/replica_lanes.h) or does not fit.
StatusOr<std::optional<Candidate>> Simulated(const ScoreInputs& in, ScoreCaches* caches,
                                             const Scored& scored, SearchResult* result) {
  Plan plan = MakePlan(in, scored);
  if (plan.Check()) return std::optional<Candidate>();
  EvaluateOptions options;
  options.memory_limit_bytes = in.memory_limit;
  options.timeline = false;  // only the kept candidates' timelines are built, at the end
  options.schedules = caches->Schedules();
  options.stage_costs = [&](RecomputeMode mode) {
    Config c = scored.config;
    c.recompute = mode;
    return caches->StageCostsFor(c);
  };
  StatusOr<Evaluation> evaluation = EvaluatePlan(in.costs, plan, options);
  if (!evaluation.ok() && evaluation.status().code() == StatusCode::kInvalidArgument) {
    return std::optional<Candidate>();
  }
  if (!evaluation.ok()) return evaluation.status();
  if (!evaluation->Fits()) {
    NoteLeastMemory(scored.config, evaluation->peak_memory_bytes, result);
    return std::optional<Candidate>();
  }
  RecordPredictions(*evaluation, &plan);
  return std::optional<Candidate>(Candidate{std::move(plan), std::move(*evaluation)});
}

// Sorts result->ranked (best first) and keeps the best and the runners-up.
void KeepBest(int runners_up, SearchResult* result) {
  std::sort(
      result->ranked.begin(), result->ranked.end(),
      [](const Candidate& a, const Candidate& b) { return CandidateKey(a) < CandidateKey(b); });
  if (static_cast<int>(result->ranked.size()) > runners_up + 1) {
    result->ranked.resize(runners_up + 1);
  }
}

// The third step: the best estimates simulated, into result->ranked (best first). Uniform and
// per-stage replication each get `rerank` simulations (of at most 4 · rerank tries), so the
// more numerous per-stage candidates never crowd out a uniform plan.
Status Rank(const ScoreInputs& in, ScoreCaches* caches, std::vector<Scored> pool,
            SearchResult* result) {
  std::stable_sort(pool.begin(), pool.end(), [](const Scored& a, const Scored& b) {
    return std::tuple(a.estimate_ms, a.config.Key()) < std::tuple(b.estimate_ms, b.config.Key());
  });
  const int rerank = in.request.rerank;
  const int budget = 4 * rerank;
  int tried[2] = {0, 0}, simulated[2] = {0, 0};
  for (const Scored& scored : pool) {
    const int group = UniformReplication(scored.stages) ? 0 : 1;
    if (tried[group] >= budget || simulated[group] >= rerank) continue;
    ++tried[group];
    TRIDENT_ASSIGN_OR_RETURN(std::optional<Candidate> candidate,
                             Simulated(in, caches, scored, result));
    if (!candidate) continue;
    result->ranked.push_back(std::move(*candidate));
    ++simulated[group];
  }
  KeepBest(in.request.runners_up, result);
  return Status::Ok();
}

// With `exact`: every space's partitions whose lower bound is below the best simulated step
// (planner/exact_partitions.h), each simulated: the plans the DP's bottleneck objective missed.
Status Refine(const ScoreInputs& in, ScoreCaches* caches, const std::vector<PartitionSpace>& spaces,
              SearchResult* result) {
  double best_ms = result->ranked.empty() ? kInf : result->ranked.front().evaluation.step_ms;
  Status status = Status::Ok();
  search_internal::LeastUnitsCache least_units;
  for (const PartitionSpace& space : spaces) {
    auto leaf = [&](std::vector<PlanStage> stages) {
      if (!status.ok()) return;
      ++result->exact_simulated;
      Config c = space.config;
      c.dp = 0;
      for (const PlanStage& st : stages) c.dp = std::max(c.dp, st.replicas);
      StatusOr<std::optional<Candidate>> simulated =
          Simulated(in, caches, {c, std::move(stages)}, result);
      if (!simulated.ok()) status = simulated.status();
      if (!simulated.ok() || !*simulated || (*simulated)->evaluation.step_ms >= best_ms) return;
      best_ms = (*simulated)->evaluation.step_ms;
      result->ranked.push_back(std::move(**simulated));
    };
    result->exact_branches += EnumeratePartitionsBelow(space, &best_ms, leaf, &least_units);
    TRIDENT_RETURN_IF_ERROR(status);
  }
  KeepBest(in.request.runners_up, result);
  return Status::Ok();
}

// The simulated timeline of each ranked candidate, which the evaluations above left out.
Status AddTimelines(const ScoreInputs& in, SearchResult* result) {
  EvaluateOptions options;
  options.memory_limit_bytes = in.memory_limit;
  for (Candidate& candidate : result->ranked) {
    TRIDENT_ASSIGN_OR_RETURN(Evaluation evaluation,
                             EvaluatePlan(in.costs, candidate.plan, options));
    candidate.evaluation.simulation.events = std::move(evaluation.simulation.events);
  }
  return Status::Ok();
}

// For the "nothing fits" message: the least memory configuration `c` would need, taking the
// fastest partition that ignores memory.
void TrackLeastMemory(const ScoreInputs& in, ScoreCaches* caches, const Config& c,
                      SearchResult* result) {
  const StageCosts& sc = *caches->StageCostsFor(c);
  DpCosts dp_costs(in.costs, sc, c, in.memory_limit);
  Partition partition = PartitionUniform(
      DpCosts(in.costs, sc, c, std::numeric_limits<int64_t>::max()), c.pp * c.v, c.dp);
  if (!partition.feasible()) return;
  int64_t peak = 0;
  for (size_t s = 0; s < partition.stages.size(); ++s) {
    const Stage& st = partition.stages[s];
    peak = std::max(peak, dp_costs
                              .Memory(st.first_layer, st.last_layer, st.replicas,
                                      static_cast<int>(s) % c.pp, c.pp)
                              .Total());
  }
  NoteLeastMemory(c, peak, result);
}

// "fits nowhere" with the shortfall and the devices that would give the leanest plan enough
// memory per device (its footprint shrinks about in proportion to the devices).
Status NothingFits(const ScoreInputs& in, const SearchResult& result) {
  const SearchRequest& request = in.request;
  std::string shortfall =
      request.model.name + " fits nowhere on " + std::to_string(request.devices) +
      " devices with " + GiB(in.memory_limit) + " each: the leanest plan (" +
      result.least_memory_config + ") needs " + GiB(result.least_memory_bytes) + " per device, " +
      GiB(result.least_memory_bytes - in.memory_limit) + " more";
  if (in.memory_limit <= in.costs.ReservedBytes()) {
    return Infeasible(shortfall + "; the limit is below the " + GiB(in.costs.ReservedBytes()) +
                      " a device reserves, so raise --max-memory");
  }
  const double per_node = in.costs.DevicesPerNode();
  double ratio =
      static_cast<double>(result.least_memory_bytes) / static_cast<double>(in.memory_limit);
  double suggested = std::ceil(request.devices * ratio / per_node) * per_node;
  std::string hint =
      suggested <= static_cast<double>(in.costs.TotalDevices())
          ? "try --devices " + std::to_string(static_cast<int64_t>(suggested)) + " or more"
          : "describe more nodes in the cluster file";
  if (result.least_memory_config.find("recompute full") == std::string::npos) {
    hint += ", --recompute full";
  }
  return Infeasible(shortfall + "; " + hint + ", or devices with more memory");
}

Status NoConfiguration(const SearchRequest& request) {
  const std::vector<ScheduleKind> schedules = SearchedSchedules(request.constraints);
  const bool async_replicas =
      !request.constraints.replicas.empty() &&
      std::find(schedules.begin(), schedules.end(), ScheduleKind::kPipeDream) != schedules.end();
  return InvalidArgument(
      "no configuration of " + request.model.name + " on " + std::to_string(request.devices) +
      " devices satisfies the constraints (tp dividing the heads and the "
      "devices per node, a cp of the profile with 2·cp dividing --seq, a "
      "micro-batch size dividing --global-batch " +
      std::to_string(request.global_batch) + " into a multiple of dp" +
      (async_replicas ? ", and under pipedream every --replicas count dividing the micro-batches"
                      : "") +
      "); relax --fix, --cuts, --replicas or --global-batch");
}

}  // namespace

// The steps: enumerate the configurations (search_space.h), score each group of them
// (search_score.h), rank the best estimates by simulating them, and with `exact` simulate every
// partition whose bound beats the best.
StatusOr<SearchResult> SearchPlans(const CostModel& costs, const SearchRequest& request) {
  TRIDENT_RETURN_IF_ERROR(CheckRequest(costs, request));
  const int64_t max_memory = request.constraints.max_memory_bytes;
  const ScoreInputs in{costs, request, max_memory > 0 ? max_memory : costs.DeviceMemoryBytes()};
  ScoreCaches caches(costs);
  RankCutoff cutoff(request.rerank);
  Scores scores;
  for (const SearchGroup& group : search_internal::EnumerateSearch(costs, request)) {
    scores.Append(search_internal::ScoreGroup(group, in, &caches, &cutoff));
  }
  SearchResult result;
  result.configurations = scores.configurations;
  result.infeasible = scores.infeasible_count;
  TRIDENT_RETURN_IF_ERROR(Rank(in, &caches, std::move(scores.scored), &result));
  TRIDENT_RETURN_IF_ERROR(Refine(in, &caches, scores.spaces, &result));
  TRIDENT_RETURN_IF_ERROR(AddTimelines(in, &result));
  if (!result.ranked.empty()) return result;
  for (const Config& c : scores.infeasible) TrackLeastMemory(in, &caches, c, &result);
  if (result.least_memory_bytes > 0) return NothingFits(in, result);
  return NoConfiguration(request);
}

}  // namespace trident
