#include "planner/search_space.h"

#include <algorithm>
#include <numeric>

namespace trident::search_internal {
namespace {

template <typename T>
bool Allowed(const std::optional<T>& fixed, T value) {
  return !fixed || *fixed == value;
}

template <typename T>
bool Contains(const std::vector<T>& list, T value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// Under flash attention selective recompute keeps what no recompute keeps (no scores are
// stashed), at the same cost: the same plans, so only none is tried.
std::vector<RecomputeMode> RecomputeModes(const SearchRequest& request) {
  if (!request.constraints.recompute.empty()) return request.constraints.recompute;
  if (request.model.attention == AttentionKind::kFlash) {
    return {RecomputeMode::kNone, RecomputeMode::kFull};
  }
  return {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
}

bool LegalSchedule(const Config& c, int num_layers) {
  const int m = c.PerReplica();
  if (c.pp * c.v > num_layers) return false;
  if (c.schedule == ScheduleKind::kNaive && m != 1) return false;
  if (c.schedule == ScheduleKind::kInterleaved1F1B && m % c.pp != 0) return false;
  return true;
}

// The enumeration, written as the nested loops it is; each For* adds its groups to out_.
class Enumeration {
 public:
  Enumeration(const CostModel& costs, const SearchRequest& request)
      : costs_(costs), request_(request), constraints_(request.constraints) {}

  std::vector<SearchGroup> Run() {
    for (int tp : costs_.TensorParallelDegrees()) ForTp(tp);
    return std::move(out_);
  }

 private:
  void ForTp(int tp);
  void ForUnit(const Config& unit);
  void ForMesh(const Config& unit, int pp, int dp);
  void ForReplicated(const Config& unit, int units);
  void ForFixedReplicas(const Config& unit, int units);
  // For each allowed micro-batch size (whose micro-batches pass `micro_batches_ok`) and
  // recompute mode, `base` with them.
  template <typename Visit, typename Filter>
  void ForBatching(const Config& base, Filter micro_batches_ok, Visit visit);
  std::vector<Config> MeshConfigs(const Config& base) const;
  std::vector<Config> ReplicatedConfigs(const Config& base) const;
  std::vector<int> ShardGroups(const Config& c) const;

  const CostModel& costs_;
  const SearchRequest& request_;
  const SearchConstraints& constraints_;
  std::vector<SearchGroup> out_;
};

void Enumeration::ForTp(int tp) {
  if (!Allowed(constraints_.tp, tp) || costs_.DevicesPerNode() % tp != 0) return;
  if (!request_.model.TensorParallelProblem(tp).empty() || request_.devices % tp != 0) return;
  for (int cp : costs_.ContextParallelDegrees()) {
    if (!Allowed(constraints_.cp, cp) || request_.devices % (tp * cp) != 0) continue;
    if (cp > 1 && request_.seq_len % (2 * cp) != 0) continue;
    for (bool sp : {false, true}) {
      if (tp == 1 ? sp : !Allowed(constraints_.sequence_parallel, sp)) continue;
      if (sp && (request_.seq_len / cp) % tp != 0) continue;
      ForUnit(Config{.tp = tp, .sp = sp, .cp = cp});
    }
  }
}

// Every mesh whose units are cp groups of tp groups.
void Enumeration::ForUnit(const Config& unit) {
  const int units = request_.devices / unit.UnitRanks();
  if (!constraints_.replicas.empty()) return ForFixedReplicas(unit, units);
  for (int pp : Divisors(units)) {
    if (pp > request_.model.NumLayers() || !Allowed(constraints_.pp, pp)) continue;
    int dp = units / pp;
    if (Allowed(constraints_.dp, dp)) ForMesh(unit, pp, dp);
  }
  // Per-stage replication is not sharded: only where level none is allowed.
  if (constraints_.replicate_stages && !constraints_.dp && constraints_.cuts.empty() &&
      Contains(SearchedLevels(constraints_), DpSharding::kNone) && !constraints_.dp_shard &&
      (units <= kMaxReplicatedUnits || constraints_.exact)) {
    ForReplicated(unit, units);
  }
}

template <typename Visit, typename Filter>
void Enumeration::ForBatching(const Config& base, Filter micro_batches_ok, Visit visit) {
  for (int mb : costs_.MicroBatches()) {
    if (!Allowed(constraints_.micro_batch, mb) || request_.global_batch % mb != 0) continue;
    const int64_t micro_batches = request_.global_batch / mb;
    if (micro_batches > Plan::kMaxMicroBatches || !micro_batches_ok(micro_batches)) continue;
    for (RecomputeMode recompute : RecomputeModes(request_)) {
      Config c = base;
      c.micro_batch = mb;
      c.recompute = recompute;
      c.micro_batches = static_cast<int>(micro_batches);
      visit(c);
    }
  }
}

void Enumeration::ForMesh(const Config& unit, int pp, int dp) {
  Config mesh = unit;
  mesh.pp = pp;
  mesh.dp = dp;
  ForBatching(
      mesh, [dp](int64_t m) { return m % dp == 0; },
      [&](const Config& base) {
        out_.push_back({SearchGroup::Kind::kMesh, base, MeshConfigs(base)});
      });
}

// Every schedule (with its virtual stages) and allowed sharding level of the mesh, sharded
// levels only where dp > 1 and not under PipeDream (its weight stashing keeps whole weight
// versions, and each update waits on a blocking all-reduce, runtime/train/pipedream.cc), each
// over whole dp and, where hybrid sharding is allowed, over the shard groups ShardGroups
// chooses.
std::vector<Config> Enumeration::MeshConfigs(const Config& base) const {
  std::vector<Config> out;
  const std::vector<ScheduleKind> schedules = SearchedSchedules(constraints_);
  for (ScheduleKind schedule : schedules) {
    if (base.pp == 1 && schedule != ScheduleKind::k1F1B && schedules.size() > 1) continue;
    const bool interleaved = schedule == ScheduleKind::kInterleaved1F1B;
    for (int v = interleaved ? 2 : 1; v <= (interleaved ? constraints_.max_virtual_stages : 1);
         ++v) {
      Config c = base;
      c.schedule = schedule;
      c.v = v;
      for (DpSharding level : SearchedLevels(constraints_)) {
        const bool sharded = level != DpSharding::kNone;
        if (sharded && (c.dp == 1 || c.schedule == ScheduleKind::kPipeDream)) continue;
        if (!sharded && constraints_.dp_shard) continue;
        c.sharding = level;
        for (int shard : sharded ? ShardGroups(c) : std::vector<int>{0}) {
          c.shard = shard;
          if (LegalSchedule(c, request_.model.NumLayers())) out.push_back(c);
        }
      }
    }
  }
  return out;
}

// Shard groups (replicas each; 0: all dp) where hybrid sharding can pay: the whole dp, and the
// largest divisor d >= 2 of dp whose d · cp · tp ranks fit in one node when d < dp, so the
// per-micro-batch and step-end collectives stay on the node's links and only the shard's
// all-reduce crosses nodes. Other divisors trade memory for no faster link; --fix dp_shard=N
// asks for N alone.
std::vector<int> Enumeration::ShardGroups(const Config& c) const {
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

// Per-stage replication: any pp from 2 to the units (it need not divide them).
void Enumeration::ForReplicated(const Config& unit, int units) {
  for (int pp = 2; pp <= std::min(units, request_.model.NumLayers()); ++pp) {
    if (!Allowed(constraints_.pp, pp)) continue;
    Config stages = unit;
    stages.pp = pp;
    ForBatching(
        stages, [](int64_t) { return true; },
        [&](const Config& base) {
          out_.push_back({SearchGroup::Kind::kReplicated, base, ReplicatedConfigs(base)});
        });
  }
}

// --replicas: the meshes whose units are the counts' sum. Equal counts are a mesh (dp each);
// where they do not divide the micro-batches, and for unequal counts, the cuts are searched for
// those counts (round robin, core/replica_lanes.h).
void Enumeration::ForFixedReplicas(const Config& unit, int units) {
  const std::vector<int>& replicas = constraints_.replicas;
  const int pp = static_cast<int>(replicas.size());
  if (std::accumulate(replicas.begin(), replicas.end(), 0) != units) return;
  if (pp > request_.model.NumLayers() || !Allowed(constraints_.pp, pp)) return;
  const bool equal =
      std::all_of(replicas.begin(), replicas.end(), [&](int r) { return r == replicas.front(); });
  if (equal && Allowed(constraints_.dp, replicas.front())) ForMesh(unit, pp, replicas.front());
  if (equal && constraints_.dp && *constraints_.dp != replicas.front()) return;
  // The user's counts are not sharded: only where level none is allowed.
  if (!Contains(SearchedLevels(constraints_), DpSharding::kNone)) return;
  Config stages = unit;
  stages.pp = pp;
  ForBatching(
      stages, [&](int64_t m) { return !equal || m % replicas.front() != 0; },  // else ForMesh's
      [&](const Config& base) {
        out_.push_back({SearchGroup::Kind::kFixedReplicas, base, ReplicatedConfigs(base)});
      });
}

// The schedules that run per-stage replication, of those searched.
std::vector<Config> Enumeration::ReplicatedConfigs(const Config& base) const {
  std::vector<Config> out;
  for (ScheduleKind schedule :
       {ScheduleKind::k1F1B, ScheduleKind::kGpipe, ScheduleKind::kZbH1, ScheduleKind::kPipeDream}) {
    if (!Contains(SearchedSchedules(constraints_), schedule)) continue;
    Config c = base;
    c.schedule = schedule;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<ScheduleKind> SearchedSchedules(const SearchConstraints& constraints) {
  if (!constraints.schedules.empty()) return constraints.schedules;
  return {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B,
          ScheduleKind::kZbH1};
}

std::vector<DpSharding> SearchedLevels(const SearchConstraints& constraints) {
  if (!constraints.dp_sharding.empty()) return constraints.dp_sharding;
  return {DpSharding::kNone, DpSharding::kOptimizer};
}

std::vector<SearchGroup> EnumerateSearch(const CostModel& costs, const SearchRequest& request) {
  return Enumeration(costs, request).Run();
}

}  // namespace trident::search_internal
