#include "planner/search_score.h"

#include <algorithm>

#include "core/replica_lanes.h"
#include "planner/partition.h"
#include "planner/search_estimate.h"

namespace trident::search_internal {
namespace {

std::vector<PlanStage> StagesOf(const Partition& partition, RecomputeMode recompute) {
  std::vector<PlanStage> stages;
  for (const Stage& s : partition.stages) {
    stages.push_back(
        {s.first_layer, s.last_layer - s.first_layer + 1, s.replicas, recompute, 0, 0});
  }
  return stages;
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

// One group's scoring: the group's configurations in order, each adding to out_.
class GroupScoring {
 public:
  GroupScoring(const ScoreInputs& in, const StageCosts& sc, ScoreCaches* caches, RankCutoff* cutoff)
      : in_(in), constraints_(in.request.constraints), sc_(sc), caches_(caches), cutoff_(cutoff) {}

  Scores Mesh(const std::vector<Config>& configs);
  Scores Replicated(const std::vector<Config>& configs);
  Scores FixedReplicas(const std::vector<Config>& configs);

 private:
  void TryConfig(const Config& c, SharedCosts* shared);
  Partition PartitionOf(const DpCosts& dp_costs, const Config& c, SharedCosts* shared);
  void TryReplicated(const Config& c);
  void TryFixedReplicas(const Config& c);
  void ScoreReplicated(Config c, const DpCosts& dp_costs, std::vector<PlanStage> stages);
  void Score(const Config& c, const DpCosts& dp_costs, std::vector<PlanStage> stages);
  void Infeasible(const Config& c);
  bool MemoryBoundExceeds(const Config& c) const;
  bool ReplicatedMemoryBoundExceeds(const Config& c) const;
  bool CannotRank(const Config& c, const DpCosts& dp_costs) const;
  void AddSpace(const Config& c, std::vector<int> replicas);
  int Units(const Config& c) const { return in_.request.devices / c.UnitRanks(); }

  const ScoreInputs& in_;
  const SearchConstraints& constraints_;
  const StageCosts& sc_;
  ScoreCaches* caches_;
  RankCutoff* cutoff_;
  Scores out_;
};

Scores GroupScoring::Mesh(const std::vector<Config>& configs) {
  SharedCosts shared(sc_);
  for (const Config& c : configs) TryConfig(c, &shared);
  return std::move(out_);
}

Scores GroupScoring::Replicated(const std::vector<Config>& configs) {
  for (const Config& c : configs) TryReplicated(c);
  return std::move(out_);
}

Scores GroupScoring::FixedReplicas(const std::vector<Config>& configs) {
  for (const Config& c : configs) TryFixedReplicas(c);
  return std::move(out_);
}

// The partition DP of c. Where 1F1B is searched, its DP at a sharding level and shard group
// runs once per mesh point, first for GPipe: GPipe's stages hold all their micro-batches and
// ZB-H1's pp, never fewer than 1F1B's, at the same costs otherwise (memory_model.h), so their
// partitions come from 1F1B's (PartitionUniformAbove). The others' are bounded (exactly,
// planner/partition.h) by the bottleneck that the latest stages of as many stages and
// replicas reach under c's costs.
Partition GroupScoring::PartitionOf(const DpCosts& dp_costs, const Config& c, SharedCosts* shared) {
  std::vector<Stage>& latest = caches_->LatestStages(c.pp * c.v, c.dp);
  const std::vector<ScheduleKind> schedules = SearchedSchedules(constraints_);
  const bool above =
      (c.schedule == ScheduleKind::kZbH1 || c.schedule == ScheduleKind::kGpipe) &&
      std::find(schedules.begin(), schedules.end(), ScheduleKind::k1F1B) != schedules.end();
  Partition partition;
  if (c.schedule == ScheduleKind::k1F1B || above) {
    const Partition* lower = shared->OneFOneB(c.sharding, c.shard);
    if (lower == nullptr) {
      Config one_f_one_b = c;
      one_f_one_b.schedule = ScheduleKind::k1F1B;
      const DpCosts lower_costs(in_.costs, sc_, one_f_one_b, in_.memory_limit, shared);
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

void GroupScoring::TryConfig(const Config& c, SharedCosts* shared) {
  ++out_.configurations;
  DpCosts dp_costs(in_.costs, sc_, c, in_.memory_limit, shared);
  if (!constraints_.cuts.empty()) {
    if (static_cast<int>(constraints_.cuts.size()) != c.pp * c.v) return;
    Score(c, dp_costs, StagesFromCuts(constraints_.cuts, sc_.NumLayers(), c));
    return;
  }
  if (MemoryBoundExceeds(c)) return Infeasible(c);
  if (constraints_.exact && c.v == 1) AddSpace(c, std::vector<int>(c.pp, c.dp));
  if (CannotRank(c, dp_costs)) return;
  Partition partition = PartitionOf(dp_costs, c, shared);
  if (!partition.feasible()) return Infeasible(c);
  Score(c, dp_costs, StagesOf(partition, c.recompute));
}

void GroupScoring::Infeasible(const Config& c) {
  ++out_.infeasible_count;
  out_.infeasible.push_back(c);
}

// Cheap bounds that spare the DP: the fullest position holds at least the average memory
// (FullestPositionLowerBound: static state, buckets and the fewest live activations), and the
// busiest position computes at least the average share of the m micro-batches, to which the
// data-parallel communication adds at least what the first layer alone costs
// (DataParallelLowerBoundMs).
bool GroupScoring::MemoryBoundExceeds(const Config& c) const {
  MemoryContext context{c.schedule,
                        c.pp,
                        c.v,
                        LaneMicroBatches(c.micro_batches, c.dp, 0),
                        c.dp,
                        c.sharding,
                        in_.costs.ReservedBytes(),
                        c.cp,
                        in_.costs.ActivationFragmentation(),
                        c.shard};
  return FullestPositionLowerBound(sc_.Footprint(0, sc_.NumLayers() - 1), context) >
         in_.memory_limit;
}

// The same bound for per-stage replication: no stage has more than units − (pp − 1) replicas,
// so no lane runs fewer than ⌈M / that⌉ micro-batches; buckets only add (per-stage replication
// is not sharded).
bool GroupScoring::ReplicatedMemoryBoundExceeds(const Config& c) const {
  const int most_replicas = std::min(Units(c) - c.pp + 1, c.micro_batches);
  MemoryContext context{c.schedule,
                        c.pp,
                        1,
                        LaneMicroBatches(c.micro_batches, most_replicas, 0),
                        1,
                        DpSharding::kNone,
                        in_.costs.ReservedBytes(),
                        1,
                        in_.costs.ActivationFragmentation()};
  return FullestPositionLowerBound(sc_.Footprint(0, sc_.NumLayers() - 1), context) >
         in_.memory_limit;
}

bool GroupScoring::CannotRank(const Config& c, const DpCosts& dp_costs) const {
  double lower_bound =
      c.PerReplica() * sc_.Times(0, sc_.NumLayers() - 1).Total() / c.pp +
      DataParallelLowerBoundMs(in_.costs, c.sharding, c.schedule == ScheduleKind::kPipeDream,
                               sc_.Footprint(0, 0), dp_costs.Links(c.dp, 0));
  return cutoff_->Reaches(lower_bound);
}

void GroupScoring::TryReplicated(const Config& c) {
  const int units = Units(c);
  const int micro_batches = c.micro_batches;
  std::vector<int> dividing, any;
  for (int r = 1; r <= std::min(units, micro_batches); ++r) {
    any.push_back(r);
    if (micro_batches % r == 0) dividing.push_back(r);
  }
  if (ReplicatedMemoryBoundExceeds(c)) return;
  if (constraints_.exact) AddSpace(c, {});
  if (units > kMaxReplicatedUnits) return;
  DpCosts dp_costs(in_.costs, sc_, c, in_.memory_limit);
  // Counts dividing M balance every replica's lanes; round robin (core/replica_lanes.h) also
  // takes the others, which the DP's busiest-lane costs judge only roughly, so both are
  // scored. PipeDream's replicas sum every update's gradients: its counts divide M.
  Partition previous;
  for (const std::vector<int>* allowed : {&dividing, &any}) {
    if (allowed == &any && c.schedule == ScheduleKind::kPipeDream) break;
    Partition partition = PartitionReplicated(dp_costs, c.pp, units, *allowed);
    if (!partition.feasible() || partition.stages == previous.stages) continue;
    previous = partition;
    ScoreReplicated(c, dp_costs, StagesOf(partition, c.recompute));
  }
}

// The user's replica counts under a schedule that runs them (not sharded): the cuts the DP
// chooses for them, or the user's cuts.
void GroupScoring::TryFixedReplicas(const Config& c) {
  DpCosts dp_costs(in_.costs, sc_, c, in_.memory_limit);
  std::vector<PlanStage> stages;
  if (constraints_.cuts.empty()) {
    if (constraints_.exact) AddSpace(c, constraints_.replicas);
    Partition partition = PartitionWithReplicas(dp_costs, constraints_.replicas);
    if (!partition.feasible()) {
      ++out_.infeasible_count;
      return;
    }
    stages = StagesOf(partition, c.recompute);
  } else {
    if (constraints_.cuts.size() != constraints_.replicas.size()) return;
    stages = StagesFromCuts(constraints_.cuts, sc_.NumLayers(), c);
    for (size_t s = 0; s < stages.size(); ++s) stages[s].replicas = constraints_.replicas[s];
  }
  ScoreReplicated(c, dp_costs, std::move(stages));
}

void GroupScoring::AddSpace(const Config& c, std::vector<int> replicas) {
  out_.spaces.push_back({&in_.costs, &sc_, c, Units(c), std::move(replicas), in_.memory_limit,
                         in_.request.dtype != DType::kFp32, in_.request.model.tied_embeddings});
}

// A per-stage replication the DP chose, unless a mesh has it: uniform on every unit with a
// count dividing M.
void GroupScoring::ScoreReplicated(Config c, const DpCosts& dp_costs,
                                   std::vector<PlanStage> stages) {
  int max_r = 0, units = 0;
  for (const PlanStage& st : stages) {
    max_r = std::max(max_r, st.replicas);
    units += st.replicas;
  }
  if (UniformReplication(stages) && units * c.UnitRanks() == in_.request.devices &&
      c.micro_batches % max_r == 0)
    return;
  c.dp = max_r;
  ++out_.configurations;
  Score(c, dp_costs, std::move(stages));
}

void GroupScoring::Score(const Config& c, const DpCosts& dp_costs, std::vector<PlanStage> stages) {
  double estimate = EstimateMs(c, dp_costs, sc_, stages);
  cutoff_->Add(estimate);
  out_.scored.push_back({c, std::move(stages), estimate});
}

}  // namespace

void Scores::Append(Scores other) {
  for (Scored& s : other.scored) scored.push_back(std::move(s));
  for (PartitionSpace& s : other.spaces) spaces.push_back(std::move(s));
  for (Config& c : other.infeasible) infeasible.push_back(c);
  configurations += other.configurations;
  infeasible_count += other.infeasible_count;
}

const StageCosts* ScoreCaches::StageCostsFor(const Config& c) {
  auto key = std::tuple(c.micro_batch, c.tp, c.sp, c.cp, c.recompute);
  auto it = stage_costs_.find(key);
  if (it == stage_costs_.end()) {
    StatusOr<StageCosts> created =
        StageCosts::Create(costs_, c.micro_batch, c.tp, c.sp, c.cp, c.recompute);
    it = stage_costs_.emplace(key, created.ok() ? std::optional(*created) : std::nullopt).first;
  }
  return it->second ? &*it->second : nullptr;
}

bool RankCutoff::Reaches(double lower_bound_ms) const {
  return best_.size() >= keep_ && !best_.empty() && lower_bound_ms >= best_.front();
}

void RankCutoff::Add(double estimate_ms) {
  if (keep_ == 0) return;
  if (best_.size() == keep_ && estimate_ms >= best_.front()) return;
  best_.push_back(estimate_ms);
  std::push_heap(best_.begin(), best_.end());
  if (best_.size() > keep_) {
    std::pop_heap(best_.begin(), best_.end());
    best_.pop_back();
  }
}

Scores ScoreGroup(const SearchGroup& group, const ScoreInputs& in, ScoreCaches* caches,
                  RankCutoff* cutoff) {
  const StageCosts* sc = caches->StageCostsFor(group.base);
  if (sc == nullptr) return {};
  GroupScoring scoring(in, *sc, caches, cutoff);
  switch (group.kind) {
    case SearchGroup::Kind::kMesh:
      return scoring.Mesh(group.configs);
    case SearchGroup::Kind::kReplicated:
      return scoring.Replicated(group.configs);
    case SearchGroup::Kind::kFixedReplicas:
      return scoring.FixedReplicas(group.configs);
  }
  return {};
}

}  // namespace trident::search_internal
