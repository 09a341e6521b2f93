#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include "core/replica_lanes.h"
#include "core/text_format.h"
#include "core/version.h"
#include "planner/exact_partitions.h"
#include "planner/partition.h"
#include "planner/plan_request.h"
#include "planner/search_checks.h"
#include "planner/search_costs.h"
#include "planner/search_estimate.h"
#include "planner/sharding_comm.h"
#include "planner/stage_costs.h"

namespace trident {
namespace {

using search_internal::CheckCuts;
using search_internal::CheckReplicas;
using search_internal::Config;
using search_internal::Describe;
using search_internal::DpCosts;
using search_internal::EstimateMs;
using search_internal::kInf;
using search_internal::SharedCosts;
// The per-stage replication DP seeds the search up to this many tp groups (it grows with
// units² for every pp); with `exact`, Refine enumerates per-stage replication on every mesh.
constexpr int kMaxReplicatedUnits = 16;

// A partition the DP chose (or the user's cuts), with its closed-form step estimate.
struct Scored {
  Config config;
  std::vector<PlanStage> stages;
  double estimate_ms = kInf;
};

std::vector<PlanStage> StagesOf(const Partition& partition, RecomputeMode recompute) {
  std::vector<PlanStage> stages;
  for (const Stage& s : partition.stages) {
    stages.push_back(
        {s.first_layer, s.last_layer - s.first_layer + 1, s.replicas, recompute, 0, 0});
  }
  return stages;
}

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

template <typename T>
bool Allowed(const std::optional<T>& fixed, T value) {
  return !fixed || *fixed == value;
}

class Searcher {
 public:
  Searcher(const CostModel& costs, const SearchRequest& request)
      : costs_(costs), request_(request), constraints_(request.constraints) {
    memory_limit_ = constraints_.max_memory_bytes > 0 ? constraints_.max_memory_bytes
                                                      : costs.DeviceMemoryBytes();
  }

  StatusOr<SearchResult> Run();

 private:
  Status CheckRequest() const;
  void ForTp(int tp);
  void ForUnit(int tp, bool sp, int cp);
  void ForMesh(const Config& unit, int pp, int dp);
  void ForReplicated(const Config& unit, int units);
  void ForFixedReplicas(const Config& unit, int units);
  void ForSharding(Config c, const StageCosts& sc, SharedCosts* shared);
  std::vector<DpSharding> Levels() const;
  std::vector<int> ShardGroups(const Config& c) const;
  void TryConfig(const Config& c, const StageCosts& sc, SharedCosts* shared);
  Partition PartitionOf(const DpCosts& dp_costs, const Config& c, const StageCosts& sc,
                        SharedCosts* shared);
  void TryReplicated(const Config& base, const StageCosts& sc);
  void TryFixedReplicas(const Config& base, const StageCosts& sc);
  void ScoreReplicated(Config c, const DpCosts& dp_costs, const StageCosts& sc,
                       std::vector<PlanStage> stages);
  void TrackLeastMemory(const Config& c);
  bool MemoryBoundExceeds(const Config& c, const StageCosts& sc) const;
  bool ReplicatedMemoryBoundExceeds(const Config& c, const StageCosts& sc, int units) const;
  bool CannotRank(const Config& c, const DpCosts& dp_costs, const StageCosts& sc) const;
  Status NothingFits(const SearchResult& result) const;
  void RememberEstimate(double estimate);
  void Score(const Config& c, const DpCosts& dp_costs, const StageCosts& sc,
             std::vector<PlanStage> stages);
  const StageCosts* CostsFor(const Config& c);
  Plan MakePlan(const Scored& scored) const;
  Status Rank();
  Status Refine();
  StatusOr<std::optional<Candidate>> Simulated(const Scored& scored);
  void KeepBest();
  Status AddTimelines();
  void AddSpace(const Config& c, const StageCosts& sc, int units, std::vector<int> replicas);
  std::vector<ScheduleKind> Schedules() const;
  std::vector<RecomputeMode> RecomputeModes() const;

  const CostModel& costs_;
  const SearchRequest& request_;
  const SearchConstraints& constraints_;
  int64_t memory_limit_ = 0;
  std::map<std::tuple<int, int, bool, int, RecomputeMode>, std::optional<StageCosts>> stage_costs_;
  std::vector<Scored> pool_;
  // Every configuration's partitions, for Refine.
  std::vector<search_internal::PartitionSpace> spaces_;
  // By (stages, replicas): the stages the latest uniform DP chose (see PartitionOf).
  std::map<std::pair<int, int>, std::vector<Stage>> latest_stages_;
  std::vector<Config> infeasible_;  // for the "nothing fits" message
  // The best `rerank` estimates so far (a max-heap): a configuration whose lower bound is
  // above the worst of them cannot enter the re-ranked set.
  std::vector<double> best_estimates_;
  SearchResult result_;
};

std::vector<ScheduleKind> Searcher::Schedules() const {
  if (!constraints_.schedules.empty()) return constraints_.schedules;
  return {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B,
          ScheduleKind::kZbH1};
}

// Under flash attention selective recompute keeps what no recompute keeps (no scores are
// stashed), at the same cost: the same plans, so only none is tried.
std::vector<RecomputeMode> Searcher::RecomputeModes() const {
  if (!constraints_.recompute.empty()) return constraints_.recompute;
  if (request_.model.attention == AttentionKind::kFlash) {
    return {RecomputeMode::kNone, RecomputeMode::kFull};
  }
  return {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
}

Status Searcher::CheckRequest() const {
  const int64_t available = costs_.TotalDevices();
  if (request_.devices < 1 || request_.devices > available) {
    return InvalidArgument("--devices " + std::to_string(request_.devices) + ": the cluster " +
                           request_.cluster_name + " has " + std::to_string(available) +
                           " devices; ask for at most that many or describe more nodes");
  }
  if (request_.global_batch < 1 || request_.seq_len < 1) {
    return InvalidArgument("--global-batch and --seq must be positive");
  }
  TRIDENT_RETURN_IF_ERROR(CheckCuts(constraints_.cuts, request_.model.NumLayers()));
  TRIDENT_RETURN_IF_ERROR(CheckReplicas(constraints_, request_.devices));
  if (costs_.NumLayers() != request_.model.NumLayers()) {
    return InvalidArgument("the profile has " + std::to_string(costs_.NumLayers()) +
                           " layers but " + request_.model.name + " has " +
                           std::to_string(request_.model.NumLayers()) +
                           "; use a profile of this model, or plan analytically");
  }
  return Status::Ok();
}

// The costs of c's (micro-batch, tp, sequence parallelism, cp, recompute), or nullptr.
const StageCosts* Searcher::CostsFor(const Config& c) {
  auto key = std::tuple(c.micro_batch, c.tp, c.sp, c.cp, c.recompute);
  auto it = stage_costs_.find(key);
  if (it == stage_costs_.end()) {
    StatusOr<StageCosts> created =
        StageCosts::Create(costs_, c.micro_batch, c.tp, c.sp, c.cp, c.recompute);
    it = stage_costs_.emplace(key, created.ok() ? std::optional(*created) : std::nullopt).first;
  }
  return it->second ? &*it->second : nullptr;
}

void Searcher::ForTp(int tp) {
  if (!Allowed(constraints_.tp, tp) || costs_.DevicesPerNode() % tp != 0) return;
  if (!request_.model.TensorParallelProblem(tp).empty() || request_.devices % tp != 0) return;
  for (int cp : costs_.ContextParallelDegrees()) {
    if (!Allowed(constraints_.cp, cp) || request_.devices % (tp * cp) != 0) continue;
    if (cp > 1 && request_.seq_len % (2 * cp) != 0) continue;
    for (bool sp : {false, true}) {
      if (tp == 1 ? sp : !Allowed(constraints_.sequence_parallel, sp)) continue;
      if (sp && (request_.seq_len / cp) % tp != 0) continue;
      ForUnit(tp, sp, cp);
    }
  }
}

// Every mesh whose units are cp groups of tp groups.
void Searcher::ForUnit(int tp, bool sp, int cp) {
  Config unit;
  unit.tp = tp;
  unit.sp = sp;
  unit.cp = cp;
  const int units = request_.devices / unit.UnitRanks();
  if (!constraints_.replicas.empty()) return ForFixedReplicas(unit, units);
  for (int pp : Divisors(units)) {
    if (pp > request_.model.NumLayers() || !Allowed(constraints_.pp, pp)) continue;
    int dp = units / pp;
    if (Allowed(constraints_.dp, dp)) ForMesh(unit, pp, dp);
  }
  // Per-stage replication is not sharded: only where level none is allowed.
  const std::vector<DpSharding> levels = Levels();
  const bool unsharded = std::find(levels.begin(), levels.end(), DpSharding::kNone) != levels.end();
  if (constraints_.replicate_stages && !constraints_.dp && constraints_.cuts.empty() && unsharded &&
      !constraints_.dp_shard && (units <= kMaxReplicatedUnits || constraints_.exact)) {
    ForReplicated(unit, units);
  }
}

// Per-stage replication: any pp from 2 to the units (it need not divide them).
void Searcher::ForReplicated(const Config& unit, int units) {
  for (int pp = 2; pp <= std::min(units, request_.model.NumLayers()); ++pp) {
    if (!Allowed(constraints_.pp, pp)) continue;
    for (int mb : costs_.MicroBatches()) {
      if (!Allowed(constraints_.micro_batch, mb) || request_.global_batch % mb != 0) continue;
      if (request_.global_batch / mb > Plan::kMaxMicroBatches) continue;
      for (RecomputeMode recompute : RecomputeModes()) {
        Config base = unit;
        base.pp = pp;
        base.micro_batch = mb;
        base.recompute = recompute;
        base.micro_batches = static_cast<int>(request_.global_batch / mb);
        const StageCosts* sc = CostsFor(base);
        if (sc != nullptr) TryReplicated(base, *sc);
      }
    }
  }
}

// --replicas: the meshes whose units are the counts' sum. Equal counts are a mesh (dp each);
// where they do not divide the micro-batches, and for unequal counts, the cuts are searched for
// those counts (round robin, core/replica_lanes.h).
void Searcher::ForFixedReplicas(const Config& unit, int units) {
  const std::vector<int>& replicas = constraints_.replicas;
  const int pp = static_cast<int>(replicas.size());
  if (std::accumulate(replicas.begin(), replicas.end(), 0) != units) return;
  if (pp > request_.model.NumLayers() || !Allowed(constraints_.pp, pp)) return;
  const bool equal =
      std::all_of(replicas.begin(), replicas.end(), [&](int r) { return r == replicas.front(); });
  if (equal && Allowed(constraints_.dp, replicas.front())) ForMesh(unit, pp, replicas.front());
  if (equal && constraints_.dp && *constraints_.dp != replicas.front()) return;
  for (int mb : costs_.MicroBatches()) {
    if (!Allowed(constraints_.micro_batch, mb) || request_.global_batch % mb != 0) continue;
    const int64_t micro_batches = request_.global_batch / mb;
    if (micro_batches > Plan::kMaxMicroBatches) continue;
    if (equal && micro_batches % replicas.front() == 0) continue;  // ForMesh's
    for (RecomputeMode recompute : RecomputeModes()) {
      Config base = unit;
      base.pp = pp;
      base.micro_batch = mb;
      base.recompute = recompute;
      base.micro_batches = static_cast<int>(micro_batches);
      const StageCosts* sc = CostsFor(base);
      if (sc != nullptr) TryFixedReplicas(base, *sc);
    }
  }
}

void Searcher::ForMesh(const Config& unit, int pp, int dp) {
  for (int mb : costs_.MicroBatches()) {
    if (!Allowed(constraints_.micro_batch, mb) || request_.global_batch % mb != 0) continue;
    int64_t micro_batches = request_.global_batch / mb;
    if (micro_batches % dp != 0 || micro_batches > Plan::kMaxMicroBatches) continue;
    for (RecomputeMode recompute : RecomputeModes()) {
      Config base = unit;
      base.pp = pp;
      base.dp = dp;
      base.micro_batch = mb;
      base.recompute = recompute;
      base.micro_batches = static_cast<int>(micro_batches);
      const StageCosts* sc = CostsFor(base);
      if (sc == nullptr) continue;
      SharedCosts shared(*sc);
      for (ScheduleKind schedule : Schedules()) {
        if (pp == 1 && schedule != ScheduleKind::k1F1B && Schedules().size() > 1) continue;
        int max_v =
            schedule == ScheduleKind::kInterleaved1F1B ? constraints_.max_virtual_stages : 1;
        for (int v = schedule == ScheduleKind::kInterleaved1F1B ? 2 : 1; v <= max_v; ++v) {
          Config c = base;
          c.schedule = schedule;
          c.v = v;
          ForSharding(c, *sc, &shared);
        }
      }
    }
  }
}

// Every allowed sharding level of the configuration, sharded levels only where dp > 1 and not
// under PipeDream (its weight stashing keeps whole weight versions, and each update waits on a
// blocking all-reduce, runtime/train/pipedream.cc), each over whole dp and, where hybrid
// sharding is allowed, over the shard groups ShardGroups chooses.
void Searcher::ForSharding(Config c, const StageCosts& sc, SharedCosts* shared) {
  for (DpSharding level : Levels()) {
    const bool sharded = level != DpSharding::kNone;
    if (sharded && (c.dp == 1 || c.schedule == ScheduleKind::kPipeDream)) continue;
    if (!sharded && constraints_.dp_shard) continue;
    c.sharding = level;
    for (int shard : sharded ? ShardGroups(c) : std::vector<int>{0}) {
      c.shard = shard;
      TryConfig(c, sc, shared);
    }
  }
}

std::vector<DpSharding> Searcher::Levels() const {
  if (!constraints_.dp_sharding.empty()) return constraints_.dp_sharding;
  return {DpSharding::kNone, DpSharding::kOptimizer};
}

// Shard groups (replicas each; 0: all dp) where hybrid sharding can pay: the whole dp, and the
// largest divisor d >= 2 of dp whose d · cp · tp ranks fit in one node when d < dp, so the
// per-micro-batch and step-end collectives stay on the node's links and only the shard's
// all-reduce crosses nodes. Other divisors trade memory for no faster link; --fix dp_shard=N
// asks for N alone.
std::vector<int> Searcher::ShardGroups(const Config& c) const {
  if (constraints_.dp_shard) {
    const int n = *constraints_.dp_shard;
    if (n < 2 || c.dp % n != 0) return {};
    return {n == c.dp ? 0 : n};
  }
  std::vector<int> groups = {0};
  if (!constraints_.hybrid) return groups;
  for (int d = c.dp; d >= 2; --d) {
    if (c.dp % d != 0 || d * c.UnitRanks() > costs_.DevicesPerNode()) continue;
    if (d < c.dp) groups.push_back(d);
    break;
  }
  return groups;
}

bool LegalSchedule(const Config& c, int num_layers) {
  const int m = c.PerReplica();
  if (c.pp * c.v > num_layers) return false;
  if (c.schedule == ScheduleKind::kNaive && m != 1) return false;
  if (c.schedule == ScheduleKind::kInterleaved1F1B && m % c.pp != 0) return false;
  return true;
}

// Stages from the user's --cuts (first layer of each stage), all with dp replicas.
std::vector<PlanStage> StagesFromCuts(const std::vector<int>& cuts, int num_layers,
                                      const Config& c) {
  std::vector<PlanStage> stages;
  for (size_t i = 0; i < cuts.size(); ++i) {
    int end = i + 1 < cuts.size() ? cuts[i + 1] : num_layers;
    stages.push_back({cuts[i], end - cuts[i], c.dp, c.recompute, 0, 0});
  }
  return stages;
}

// The partition DP of c. Where 1F1B is searched, its DP at a sharding level and shard group
// runs once per mesh point, first for GPipe: GPipe's stages hold all their micro-batches and
// ZB-H1's pp, never fewer than 1F1B's, at the same costs otherwise (memory_model.h), so their
// partitions come from 1F1B's (PartitionUniformAbove). The others' are bounded (exactly,
// planner/partition.h) by the bottleneck that the latest stages of as many stages and
// replicas reach under c's costs.
Partition Searcher::PartitionOf(const DpCosts& dp_costs, const Config& c, const StageCosts& sc,
                                SharedCosts* shared) {
  std::vector<Stage>& latest = latest_stages_[{c.pp * c.v, c.dp}];
  const std::vector<ScheduleKind> schedules = Schedules();
  const bool above =
      (c.schedule == ScheduleKind::kZbH1 || c.schedule == ScheduleKind::kGpipe) &&
      std::find(schedules.begin(), schedules.end(), ScheduleKind::k1F1B) != schedules.end();
  Partition partition;
  if (c.schedule == ScheduleKind::k1F1B || above) {
    const Partition* lower = shared->OneFOneB(c.sharding, c.shard);
    if (lower == nullptr) {
      Config one_f_one_b = c;
      one_f_one_b.schedule = ScheduleKind::k1F1B;
      const DpCosts lower_costs(costs_, sc, one_f_one_b, memory_limit_, shared);
      lower = shared->SetOneFOneB(
          c.sharding, c.shard,
          PartitionUniform(lower_costs, c.pp, c.dp, BottleneckOf(lower_costs, latest)));
    }
    partition = above ? PartitionUniformAbove(dp_costs, *lower, c.pp, c.dp) : *lower;
  } else {
    partition = PartitionUniform(dp_costs, c.pp * c.v, c.dp, BottleneckOf(dp_costs, latest));
  }
  if (partition.feasible()) latest = partition.stages;
  return partition;
}

void Searcher::TryConfig(const Config& c, const StageCosts& sc, SharedCosts* shared) {
  if (!LegalSchedule(c, sc.NumLayers())) return;
  ++result_.configurations;
  DpCosts dp_costs(costs_, sc, c, memory_limit_, shared);
  if (!constraints_.cuts.empty()) {
    if (static_cast<int>(constraints_.cuts.size()) != c.pp * c.v) return;
    Score(c, dp_costs, sc, StagesFromCuts(constraints_.cuts, sc.NumLayers(), c));
    return;
  }
  if (MemoryBoundExceeds(c, sc)) {
    ++result_.infeasible;
    infeasible_.push_back(c);
    return;
  }
  if (constraints_.exact && c.v == 1) AddSpace(c, sc, c.pp * c.dp, std::vector<int>(c.pp, c.dp));
  if (CannotRank(c, dp_costs, sc)) return;
  Partition partition = PartitionOf(dp_costs, c, sc, shared);
  if (!partition.feasible()) {
    ++result_.infeasible;
    infeasible_.push_back(c);
    return;
  }
  Score(c, dp_costs, sc, StagesOf(partition, c.recompute));
}

// Cheap bounds that spare the DP: the fullest position holds at least the average memory
// (FullestPositionLowerBound: static state, buckets and the fewest live activations), and the
// busiest position computes at least the average share of the m micro-batches, to which the
// data-parallel communication adds at least what the first layer alone costs
// (DataParallelLowerBoundMs).
bool Searcher::MemoryBoundExceeds(const Config& c, const StageCosts& sc) const {
  MemoryContext context{c.schedule,
                        c.pp,
                        c.v,
                        LaneMicroBatches(c.micro_batches, c.dp, 0),
                        c.dp,
                        c.sharding,
                        costs_.ReservedBytes(),
                        c.cp,
                        costs_.ActivationFragmentation(),
                        c.shard};
  return FullestPositionLowerBound(sc.Footprint(0, sc.NumLayers() - 1), context) > memory_limit_;
}

// The same bound for per-stage replication: no stage has more than units − (pp − 1) replicas,
// so no lane runs fewer than ⌈M / that⌉ micro-batches; buckets only add (per-stage replication
// is not sharded).
bool Searcher::ReplicatedMemoryBoundExceeds(const Config& c, const StageCosts& sc,
                                            int units) const {
  const int most_replicas = std::min(units - c.pp + 1, c.micro_batches);
  MemoryContext context{c.schedule,
                        c.pp,
                        1,
                        LaneMicroBatches(c.micro_batches, most_replicas, 0),
                        1,
                        DpSharding::kNone,
                        costs_.ReservedBytes(),
                        1,
                        costs_.ActivationFragmentation()};
  return FullestPositionLowerBound(sc.Footprint(0, sc.NumLayers() - 1), context) > memory_limit_;
}

bool Searcher::CannotRank(const Config& c, const DpCosts& dp_costs, const StageCosts& sc) const {
  if (best_estimates_.size() < static_cast<size_t>(request_.rerank)) return false;
  double lower_bound =
      c.PerReplica() * sc.Times(0, sc.NumLayers() - 1).Total() / c.pp +
      DataParallelLowerBoundMs(costs_, c.sharding, c.schedule == ScheduleKind::kPipeDream,
                               sc.Footprint(0, 0), dp_costs.Links(c.dp, 0));
  return lower_bound >= best_estimates_.front();
}

void Searcher::RememberEstimate(double estimate) {
  const size_t keep = static_cast<size_t>(request_.rerank);
  if (best_estimates_.size() == keep && estimate >= best_estimates_.front()) return;
  best_estimates_.push_back(estimate);
  std::push_heap(best_estimates_.begin(), best_estimates_.end());
  if (best_estimates_.size() > keep) {
    std::pop_heap(best_estimates_.begin(), best_estimates_.end());
    best_estimates_.pop_back();
  }
}

void Searcher::TryReplicated(const Config& base, const StageCosts& sc) {
  const int units = request_.devices / base.UnitRanks();
  const int micro_batches = base.micro_batches;
  std::vector<int> dividing, any;
  for (int r = 1; r <= std::min(units, micro_batches); ++r) {
    any.push_back(r);
    if (micro_batches % r == 0) dividing.push_back(r);
  }
  const std::vector<ScheduleKind> schedules = Schedules();
  for (ScheduleKind schedule :
       {ScheduleKind::k1F1B, ScheduleKind::kGpipe, ScheduleKind::kZbH1, ScheduleKind::kPipeDream}) {
    if (std::find(schedules.begin(), schedules.end(), schedule) == schedules.end()) continue;
    Config c = base;
    c.schedule = schedule;
    if (ReplicatedMemoryBoundExceeds(c, sc, units)) continue;
    if (constraints_.exact) AddSpace(c, sc, units, {});
    if (units > kMaxReplicatedUnits) continue;
    DpCosts dp_costs(costs_, sc, c, memory_limit_);
    // Counts dividing M balance every replica's lanes; round robin (core/replica_lanes.h) also
    // takes the others, which the DP's busiest-lane costs judge only roughly, so both are
    // scored. PipeDream's replicas sum every update's gradients: its counts divide M.
    Partition previous;
    for (const std::vector<int>* allowed : {&dividing, &any}) {
      if (allowed == &any && schedule == ScheduleKind::kPipeDream) break;
      Partition partition = PartitionReplicated(dp_costs, c.pp, units, *allowed);
      if (!partition.feasible() || partition.stages == previous.stages) continue;
      previous = partition;
      ScoreReplicated(c, dp_costs, sc, StagesOf(partition, c.recompute));
    }
  }
}

// The user's replica counts under each schedule that runs them (not sharded): the cuts the DP
// chooses for them, or the user's cuts.
void Searcher::TryFixedReplicas(const Config& base, const StageCosts& sc) {
  const std::vector<ScheduleKind> schedules = Schedules();
  const std::vector<DpSharding> levels = Levels();
  if (std::find(levels.begin(), levels.end(), DpSharding::kNone) == levels.end()) return;
  for (ScheduleKind schedule :
       {ScheduleKind::k1F1B, ScheduleKind::kGpipe, ScheduleKind::kZbH1, ScheduleKind::kPipeDream}) {
    if (std::find(schedules.begin(), schedules.end(), schedule) == schedules.end()) continue;
    Config c = base;
    c.schedule = schedule;
    DpCosts dp_costs(costs_, sc, c, memory_limit_);
    std::vector<PlanStage> stages;
    if (constraints_.cuts.empty()) {
      if (constraints_.exact) {
        AddSpace(c, sc, request_.devices / base.UnitRanks(), constraints_.replicas);
      }
      Partition partition = PartitionWithReplicas(dp_costs, constraints_.replicas);
      if (!partition.feasible()) {
        ++result_.infeasible;
        continue;
      }
      stages = StagesOf(partition, c.recompute);
    } else {
      if (constraints_.cuts.size() != constraints_.replicas.size()) continue;
      stages = StagesFromCuts(constraints_.cuts, sc.NumLayers(), c);
      for (size_t s = 0; s < stages.size(); ++s) stages[s].replicas = constraints_.replicas[s];
    }
    ScoreReplicated(c, dp_costs, sc, std::move(stages));
  }
}

void Searcher::AddSpace(const Config& c, const StageCosts& sc, int units,
                        std::vector<int> replicas) {
  spaces_.push_back({&costs_, &sc, c, units, std::move(replicas), memory_limit_,
                     request_.dtype != DType::kFp32, request_.model.tied_embeddings});
}

// A per-stage replication the DP chose, unless ForMesh has it: uniform on every unit with a
// count dividing M.
void Searcher::ScoreReplicated(Config c, const DpCosts& dp_costs, const StageCosts& sc,
                               std::vector<PlanStage> stages) {
  int max_r = 0, units = 0;
  for (const PlanStage& st : stages) {
    max_r = std::max(max_r, st.replicas);
    units += st.replicas;
  }
  if (UniformReplication(stages) && units * c.UnitRanks() == request_.devices &&
      c.micro_batches % max_r == 0)
    return;
  c.dp = max_r;
  ++result_.configurations;
  Score(c, dp_costs, sc, std::move(stages));
}

// For the "nothing fits" message: the least memory this configuration would need, taking the
// fastest partition that ignores memory.
void Searcher::TrackLeastMemory(const Config& c) {
  const StageCosts& sc = *CostsFor(c);
  DpCosts dp_costs(costs_, sc, c, memory_limit_);
  Partition partition = PartitionUniform(
      DpCosts(costs_, sc, c, std::numeric_limits<int64_t>::max()), c.pp * c.v, c.dp);
  if (!partition.feasible()) return;
  int64_t peak = 0;
  for (size_t s = 0; s < partition.stages.size(); ++s) {
    const Stage& st = partition.stages[s];
    peak = std::max(peak, dp_costs
                              .Memory(st.first_layer, st.last_layer, st.replicas,
                                      static_cast<int>(s) % c.pp, c.pp)
                              .Total());
  }
  if (result_.least_memory_bytes == 0 || peak < result_.least_memory_bytes) {
    result_.least_memory_bytes = peak;
    result_.least_memory_config = Describe(c);
  }
}

void Searcher::Score(const Config& c, const DpCosts& dp_costs, const StageCosts& sc,
                     std::vector<PlanStage> stages) {
  double estimate = EstimateMs(c, dp_costs, sc, stages);
  RememberEstimate(estimate);
  pool_.push_back({c, std::move(stages), estimate});
}

Plan Searcher::MakePlan(const Scored& scored) const {
  const Config& c = scored.config;
  Plan plan;
  CopyJobToPlan(request_, &plan);
  plan.devices_per_node = costs_.DevicesPerNode();
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

// Fills result_.ranked (best first).
Status Searcher::Rank() {
  std::stable_sort(pool_.begin(), pool_.end(), [](const Scored& a, const Scored& b) {
    return std::tuple(a.estimate_ms, a.config.Key()) < std::tuple(b.estimate_ms, b.config.Key());
  });
  // Uniform and per-stage replication each get `rerank` simulations (of at most 4 · rerank
  // tries), so the more numerous per-stage candidates never crowd out a uniform plan.
  const int budget = 4 * request_.rerank;
  int tried[2] = {0, 0}, simulated[2] = {0, 0};
  for (size_t i = 0; i < pool_.size(); ++i) {
    const int group = UniformReplication(pool_[i].stages) ? 0 : 1;
    if (tried[group] >= budget || simulated[group] >= request_.rerank) continue;
    ++tried[group];
    TRIDENT_ASSIGN_OR_RETURN(std::optional<Candidate> candidate, Simulated(pool_[i]));
    if (!candidate) continue;
    result_.ranked.push_back(std::move(*candidate));
    ++simulated[group];
  }
  KeepBest();
  return Status::Ok();
}

// Sorts result_.ranked (best first) and keeps the best and the runners-up.
void Searcher::KeepBest() {
  std::sort(
      result_.ranked.begin(), result_.ranked.end(),
      [](const Candidate& a, const Candidate& b) { return CandidateKey(a) < CandidateKey(b); });
  if (static_cast<int>(result_.ranked.size()) > request_.runners_up + 1) {
    result_.ranked.resize(request_.runners_up + 1);
  }
}

// Every configuration's partitions whose lower bound is below the best simulated step
// (planner/exact_partitions.h), each simulated: the plans the DP's bottleneck objective missed.
Status Searcher::Refine() {
  if (!constraints_.exact) return Status::Ok();
  double best_ms = result_.ranked.empty() ? kInf : result_.ranked.front().evaluation.step_ms;
  Status status = Status::Ok();
  search_internal::LeastUnitsCache least_units;
  for (const search_internal::PartitionSpace& space : spaces_) {
    auto leaf = [&](std::vector<PlanStage> stages) {
      if (!status.ok()) return;
      ++result_.exact_simulated;
      Config c = space.config;
      c.dp = 0;
      for (const PlanStage& st : stages) c.dp = std::max(c.dp, st.replicas);
      StatusOr<std::optional<Candidate>> simulated = Simulated({c, std::move(stages)});
      if (!simulated.ok()) status = simulated.status();
      if (!simulated.ok() || !*simulated || (*simulated)->evaluation.step_ms >= best_ms) return;
      best_ms = (*simulated)->evaluation.step_ms;
      result_.ranked.push_back(std::move(**simulated));
    };
    result_.exact_branches += EnumeratePartitionsBelow(space, &best_ms, leaf, &least_units);
    TRIDENT_RETURN_IF_ERROR(status);
  }
  KeepBest();
  return Status::Ok();
}

// The plan of `scored` simulated without its timeline, with its predictions recorded; nullopt when
// it cannot run (Plan::Check, or replica counts whose lanes deadlock: PipeDream's round robin has
// no lowered warm-up, core/replica_lanes.h) or does not fit.
StatusOr<std::optional<Candidate>> Searcher::Simulated(const Scored& scored) {
  Plan plan = MakePlan(scored);
  if (plan.Check()) return std::optional<Candidate>();
  EvaluateOptions options;
  options.memory_limit_bytes = memory_limit_;
  options.timeline = false;  // only the kept candidates' timelines are built, at the end
  StatusOr<Evaluation> evaluation = EvaluatePlan(costs_, plan, options);
  if (!evaluation.ok() && evaluation.status().code() == StatusCode::kInvalidArgument) {
    return std::optional<Candidate>();
  }
  if (!evaluation.ok()) return evaluation.status();
  if (!evaluation->Fits()) {
    if (result_.least_memory_bytes == 0 ||
        evaluation->peak_memory_bytes < result_.least_memory_bytes) {
      result_.least_memory_bytes = evaluation->peak_memory_bytes;
      result_.least_memory_config = Describe(scored.config);
    }
    return std::optional<Candidate>();
  }
  RecordPredictions(*evaluation, &plan);
  return std::optional<Candidate>(Candidate{std::move(plan), std::move(*evaluation)});
}

// The simulated timeline of each ranked candidate, which Rank's evaluations left out.
Status Searcher::AddTimelines() {
  EvaluateOptions options;
  options.memory_limit_bytes = memory_limit_;
  for (Candidate& candidate : result_.ranked) {
    TRIDENT_ASSIGN_OR_RETURN(Evaluation evaluation, EvaluatePlan(costs_, candidate.plan, options));
    candidate.evaluation.simulation.events = std::move(evaluation.simulation.events);
  }
  return Status::Ok();
}

// "fits nowhere" with the shortfall and the devices that would give the leanest plan enough
// memory per device (its footprint shrinks about in proportion to the devices).
Status Searcher::NothingFits(const SearchResult& result) const {
  std::string shortfall = request_.model.name + " fits nowhere on " +
                          std::to_string(request_.devices) + " devices with " + GiB(memory_limit_) +
                          " each: the leanest plan (" + result.least_memory_config + ") needs " +
                          GiB(result.least_memory_bytes) + " per device, " +
                          GiB(result.least_memory_bytes - memory_limit_) + " more";
  if (memory_limit_ <= costs_.ReservedBytes()) {
    return Infeasible(shortfall + "; the limit is below the " + GiB(costs_.ReservedBytes()) +
                      " a device reserves, so raise --max-memory");
  }
  const double per_node = costs_.DevicesPerNode();
  double ratio =
      static_cast<double>(result.least_memory_bytes) / static_cast<double>(memory_limit_);
  double suggested = std::ceil(request_.devices * ratio / per_node) * per_node;
  std::string hint =
      suggested <= static_cast<double>(costs_.TotalDevices())
          ? "try --devices " + std::to_string(static_cast<int64_t>(suggested)) + " or more"
          : "describe more nodes in the cluster file";
  if (result.least_memory_config.find("recompute full") == std::string::npos) {
    hint += ", --recompute full";
  }
  return Infeasible(shortfall + "; " + hint + ", or devices with more memory");
}

StatusOr<SearchResult> Searcher::Run() {
  TRIDENT_RETURN_IF_ERROR(CheckRequest());
  for (int tp : costs_.TensorParallelDegrees()) ForTp(tp);
  TRIDENT_RETURN_IF_ERROR(Rank());
  TRIDENT_RETURN_IF_ERROR(Refine());
  TRIDENT_RETURN_IF_ERROR(AddTimelines());
  if (!result_.ranked.empty()) return std::move(result_);
  for (const Config& c : infeasible_) TrackLeastMemory(c);
  if (result_.least_memory_bytes > 0) return NothingFits(result_);
  const std::vector<ScheduleKind> schedules = Schedules();
  const bool async_replicas =
      !constraints_.replicas.empty() &&
      std::find(schedules.begin(), schedules.end(), ScheduleKind::kPipeDream) != schedules.end();
  return InvalidArgument(
      "no configuration of " + request_.model.name + " on " + std::to_string(request_.devices) +
      " devices satisfies the constraints (tp dividing the heads and the "
      "devices per node, a cp of the profile with 2·cp dividing --seq, a "
      "micro-batch size dividing --global-batch " +
      std::to_string(request_.global_batch) + " into a multiple of dp" +
      (async_replicas ? ", and under pipedream every --replicas count dividing the micro-batches"
                      : "") +
      "); relax --fix, --cuts, --replicas or --global-batch");
}

}  // namespace

StatusOr<SearchResult> SearchPlans(const CostModel& costs, const SearchRequest& request) {
  return Searcher(costs, request).Run();
}

}  // namespace trident
