// The search's view of one configuration (planner/search.h): the point of the outer loop, and
// the partition DP's costs of it, with what the DPs of one mesh share across schedules and
// sharding levels. Internal to the planner: search.cc and its tests use it.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/plan.h"
#include "core/replica_lanes.h"
#include "planner/cost_model.h"
#include "planner/memory_model.h"
#include "planner/partition.h"
#include "planner/sharding_comm.h"
#include "planner/stage_costs.h"

namespace trident::search_internal {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// One point of the outer loop.
struct Config {
  int tp = 1, pp = 1, dp = 1, micro_batch = 1, v = 1;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  RecomputeMode recompute = RecomputeMode::kNone;
  DpSharding sharding = DpSharding::kNone;
  int shard = 0;          // replicas of a shard group (Plan::dp_shard); 0: every replica
  int micro_batches = 1;  // over all replicas
  bool sp = false;        // sequence parallelism in the tp group
  int cp = 1;             // context parallelism: each replica is a cp group of tp groups
  int PerReplica() const { return micro_batches / dp; }
  // Ranks of one unit of the partition DP: a replica of a position holds tp · cp ranks.
  int UnitRanks() const { return tp * cp; }
  auto Key() const {
    return std::tuple(cp, tp, sp, pp, micro_batch, schedule, v, recompute, sharding, shard);
  }
};

// "tp 8 + sp, pp 4, dp 16, micro-batch 1, 1f1b, recompute none": for progress lines.
std::string Describe(const Config& c);

// What the partition DPs of one mesh, micro-batch size and recompute mode share across their
// schedules and sharding levels, filled as they ask: each layer range's collectives on each set
// of links (ShardCollectivesOf: its bytes and links alone decide them), its time at each level
// on each set of links (DpCosts::TimeMs) and each cut's boundary transfer (the mesh alone
// places it). The values are those the DPs would compute, bit for bit.
class SharedCosts {
 public:
  explicit SharedCosts(const StageCosts& costs) : costs_(costs) {}

  // ShardCollectivesOf(level, f, links) for f = layers [first, last]'s footprint, at kFull for
  // every sharded level.
  class Table {
   public:
    explicit Table(int layers) : rows_(static_cast<size_t>(layers)) {}
    const ShardCollectives* Find(int first, int last) const {
      const std::vector<std::optional<ShardCollectives>>& row = rows_[first];
      if (row.empty() || !row[last - first]) return nullptr;
      return &*row[last - first];
    }
    const ShardCollectives& Put(int first, int last, const ShardCollectives& value) {
      std::vector<std::optional<ShardCollectives>>& row = rows_[first];
      if (row.empty()) row.resize(rows_.size() - first);
      return *(row[last - first] = value);
    }

   private:
    // rows_[first][last - first], allocated as the DPs reach them.
    std::vector<std::vector<std::optional<ShardCollectives>>> rows_;
  };

  // DpCosts::TimeMs of layers [first, last] at one sharding level on one set of links (NaN: not
  // yet known): it reads neither the schedule nor v, so the DPs of every schedule share it.
  class TimeTable {
   public:
    explicit TimeTable(int layers) : rows_(static_cast<size_t>(layers)) {}
    double& At(int first, int last) {
      std::vector<double>& row = rows_[first];
      if (row.empty()) row.assign(rows_.size() - first, std::numeric_limits<double>::quiet_NaN());
      return row[last - first];
    }

   private:
    // rows_[first][last - first], allocated as the DPs reach them.
    std::vector<std::vector<double>> rows_;
  };

  TimeTable* TimesFor(DpSharding level, const ShardGroupLinks& links) {
    auto key = std::tuple(level, links.ranks, links.level, links.shard_ranks, links.shard_level);
    auto it = times_.find(key);
    if (it == times_.end()) it = times_.emplace(key, TimeTable(costs_.NumLayers())).first;
    return &it->second;
  }

  Table* TableFor(bool sharded, const ShardGroupLinks& links) {
    auto key = std::tuple(sharded, links.ranks, links.level, links.shard_ranks, links.shard_level);
    auto it = tables_.find(key);
    if (it == tables_.end()) it = tables_.emplace(key, Table(costs_.NumLayers())).first;
    return &it->second;
  }

  // The partition 1F1B's DP chose at a sharding level and shard group, if it ran.
  const Partition* OneFOneB(DpSharding level, int shard) const {
    auto it = one_f_one_b_.find({level, shard});
    return it == one_f_one_b_.end() ? nullptr : &it->second;
  }
  const Partition* SetOneFOneB(DpSharding level, int shard, Partition partition) {
    return &(one_f_one_b_[{level, shard}] = std::move(partition));
  }

  // The boundary costs at one unit, by the last layer left of the cut (NaN: not yet known).
  std::vector<double>* BoundaryRow(int boundary_unit) {
    auto it = boundaries_.find(boundary_unit);
    if (it == boundaries_.end()) {
      it =
          boundaries_
              .emplace(boundary_unit, std::vector<double>(costs_.NumLayers(),
                                                          std::numeric_limits<double>::quiet_NaN()))
              .first;
    }
    return &it->second;
  }

 private:
  const StageCosts& costs_;
  std::map<std::tuple<bool, int, int, int, int>, Table> tables_;
  std::map<std::tuple<DpSharding, int, int, int, int>, TimeTable> times_;
  std::map<int, std::vector<double>> boundaries_;
  std::map<std::pair<DpSharding, int>, Partition> one_f_one_b_;
};

// The partition DP's view of one configuration (see planner/partition.h).
class DpCosts : public PartitionCosts {
 public:
  // `shared`, if any, holds the costs of c's mesh, micro-batch size and recompute mode.
  DpCosts(const CostModel& model, const StageCosts& costs, const Config& config,
          int64_t memory_limit, SharedCosts* shared = nullptr)
      : model_(model),
        costs_(costs),
        config_(config),
        memory_limit_(memory_limit),
        context_(Context(config.dp, config.pp, model)),
        shared_(shared) {}

  int NumLayers() const override { return costs_.NumLayers(); }

  // TimeMs, or +inf where the stage does not fit in memory.
  double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                 int num_stages) const override {
    if (!Fits(first, last, replicas, stage_index, num_stages)) return kInf;
    return TimeMs(first, last, replicas, first_unit);
  }

  // StageMs is TimeMs or +inf, never below ComputeMs: the memory check and the communication
  // wait until the compute, then a time already known, is below the limit.
  double StageMsBelow(int first, int last, int replicas, int first_unit, int stage_index,
                      int num_stages, double limit_ms) const override {
    const double compute_ms = ComputeMs(first, last, replicas);
    if (compute_ms >= limit_ms) return compute_ms;
    double* time_ms = TimeSlot(first, last, replicas, first_unit);
    if (time_ms == nullptr) {
      return StageMs(first, last, replicas, first_unit, stage_index, num_stages);
    }
    if (*time_ms >= limit_ms) return *time_ms;  // false while NaN: not yet known
    if (!Fits(first, last, replicas, stage_index, num_stages)) return kInf;
    if (std::isnan(*time_ms)) *time_ms = NewTimeMs(first, last, replicas, first_unit);
    return *time_ms;
  }

  // TimeMs without the communication: at most TimeMs, whose other terms are >= 0 (adding them
  // rounds to no less).
  double ComputeMs(int first, int last, int replicas) const {
    const int lane = replicas == config_.dp ? context_.micro_batches
                                            : LaneMicroBatches(config_.micro_batches, replicas, 0);
    return costs_.Times(first, last).Total() * lane / config_.micro_batches;
  }

  bool Fits(int first, int last, int replicas, int stage_index, int num_stages) const {
    // num_stages / v and stage_index % pp, without dividing where the DP is c's own.
    const int pp = num_stages == config_.pp * config_.v ? config_.pp : num_stages / config_.v;
    const int position = stage_index < pp ? stage_index : stage_index % pp;
    return Memory(first, last, replicas, position, pp).Total() <= memory_limit_;
  }

  // The stage's time per micro-batch of the step, memory aside: the busiest lane's ceil(M / r)
  // micro-batches of compute (round robin) and the data-parallel communication the evaluation
  // charges (planner/sharding_comm.h), the sharding's per-micro-batch part left exposed
  // included. From the shared costs where they apply.
  double TimeMs(int first, int last, int replicas, int first_unit) const {
    double* ms = TimeSlot(first, last, replicas, first_unit);
    if (ms == nullptr) return NewTimeMs(first, last, replicas, first_unit);
    if (std::isnan(*ms)) *ms = NewTimeMs(first, last, replicas, first_unit);
    return *ms;
  }

  // The shared TimeMs of the stage (NaN until known), or nullptr where none is shared.
  double* TimeSlot(int first, int last, int replicas, int first_unit) const {
    if (shared_ == nullptr || !Uniform(replicas, first_unit)) return nullptr;
    return &TimeTableAt(first_unit)->At(first, last);
  }

  double NewTimeMs(int first, int last, int replicas, int first_unit) const {
    const double m = config_.micro_batches;
    const int lane = replicas == config_.dp ? context_.micro_batches
                                            : LaneMicroBatches(config_.micro_batches, replicas, 0);
    const double compute = costs_.Times(first, last).Total();
    const ShardingComm comm = StageComm(first, last, replicas, first_unit);
    const double exposed = ExposedMicroBatchCommMs(config_.sharding, comm, lane, compute);
    return (compute * lane + comm.sync_ms + comm.gather_ms + exposed) / m;
  }

  double BoundaryMs(int last_of_left, int boundary_unit) const override {
    if (shared_ == nullptr) return NewBoundaryMs(last_of_left, boundary_unit);
    if (boundary_row_ == nullptr || boundary_unit != boundary_unit_) {
      boundary_row_ = shared_->BoundaryRow(boundary_unit);
      boundary_unit_ = boundary_unit;
    }
    double& ms = (*boundary_row_)[last_of_left];
    if (std::isnan(ms)) ms = NewBoundaryMs(last_of_left, boundary_unit);
    return ms;
  }

  void BoundaryRow(int boundary_unit, std::span<double> out) const override {
    if (shared_ == nullptr) return PartitionCosts::BoundaryRow(boundary_unit, out);
    std::vector<double>& row = *shared_->BoundaryRow(boundary_unit);
    for (std::size_t last = 0; last < out.size(); ++last) {
      if (std::isnan(row[last])) row[last] = NewBoundaryMs(static_cast<int>(last), boundary_unit);
      out[last] = row[last];
    }
  }

  double NewBoundaryMs(int last_of_left, int boundary_unit) const {
    const int per_node = model_.DevicesPerNode();
    const int unit_ranks = config_.UnitRanks();
    bool crosses =
        config_.dp * unit_ranks >= per_node || (boundary_unit * unit_ranks) % per_node == 0;
    // Leaving a node, the transfer runs at the level spanned by the ranks dp·cp·tp either side
    // of the boundary, where every replica's sender and receiver lie.
    const int reach = config_.dp * unit_ranks, boundary_rank = boundary_unit * unit_ranks;
    int level = crosses ? std::max(1, model_.LevelSpanning(std::max(0, boundary_rank - reach),
                                                           boundary_rank + reach - 1))
                        : 0;
    return model_.CollectiveMsAtLevel(
        Collective::kP2p, static_cast<double>(costs_.OutputBytes(last_of_left)), 2, level);
  }

  // Interleaved: a position holds v chunks; judge each chunk as if all were like it.
  MemoryBreakdown Memory(int first, int last, int replicas, int position, int pp) const {
    const PositionFootprint f = costs_.Footprint(first, last, config_.v);
    if (replicas == config_.dp && pp == config_.pp) return PositionMemory(f, position, context_);
    return PositionMemory(f, position, Context(replicas, pp, model_));
  }

  // The collectives of `f` on `replicas` units from `first_unit` (planner/sharding_comm.h).
  ShardingComm Comm(const PositionFootprint& f, int replicas, int first_unit) const {
    return ShardingCommOf(model_, config_.sharding, f, Links(replicas, first_unit));
  }

  // Comm of layers [first, last], from the shared costs where they apply.
  ShardingComm StageComm(int first, int last, int replicas, int first_unit) const {
    if (shared_ == nullptr || !Uniform(replicas, first_unit)) {
      return Comm(costs_.Footprint(first, last), replicas, first_unit);
    }
    SharedCosts::Table* table = TableAt(first_unit);
    const ShardCollectives* found = table->Find(first, last);
    if (found == nullptr) {
      const DpSharding level =
          config_.sharding == DpSharding::kNone ? DpSharding::kNone : DpSharding::kFull;
      found = &table->Put(first, last,
                          ShardCollectivesOf(model_, level, costs_.Footprint(first, last),
                                             Links(replicas, first_unit)));
    }
    return ShardingCommFrom(config_.sharding, *found);
  }

  const CostModel& model() const { return model_; }

  // The links of the replicas' cp ranks (RankMap::GradGroup: dp · cp ranks) and of the first
  // shard group (shard · cp ranks), cached per first unit for the uniform DP's dp replicas.
  ShardGroupLinks Links(int replicas, int first_unit) const {
    if (!Uniform(replicas, first_unit)) return NewLinks(replicas, first_unit);
    const size_t stage = static_cast<size_t>(first_unit / replicas);
    if (links_.size() <= stage) links_.resize(stage + 1);
    std::optional<ShardGroupLinks>& cached = links_[stage];
    if (!cached) cached = NewLinks(replicas, first_unit);
    return *cached;
  }

 private:
  MemoryContext Context(int replicas, int pp, const CostModel& model) const {
    return MemoryContext{config_.schedule,
                         pp,
                         config_.v,
                         LaneMicroBatches(config_.micro_batches, replicas, 0),
                         replicas,
                         config_.sharding,
                         model.ReservedBytes(),
                         config_.cp,
                         model.ActivationFragmentation(),
                         config_.shard};
  }

  ShardGroupLinks NewLinks(int replicas, int first_unit) const {
    const int unit_ranks = config_.UnitRanks();
    const int first_rank = first_unit * unit_ranks;
    const int shard = config_.shard > 0 ? config_.shard : replicas;
    ShardGroupLinks links;
    links.ranks = replicas * config_.cp;
    links.level = model_.LevelSpanning(first_rank, first_rank + replicas * unit_ranks - 1);
    links.shard_ranks = config_.sharding == DpSharding::kNone ? links.ranks : shard * config_.cp;
    links.shard_level = model_.LevelSpanning(first_rank, first_rank + shard * unit_ranks - 1);
    return links;
  }

  // Whether these are the uniform DP's dp replicas from first_unit: stage first_unit / dp's.
  bool Uniform(int replicas, int first_unit) const {
    return replicas == config_.dp && first_unit % replicas == 0;
  }

  // REQUIRES: Uniform(dp, first_unit).
  SharedCosts::Table* TableAt(int first_unit) const {
    const size_t stage = static_cast<size_t>(first_unit / config_.dp);
    if (tables_.size() <= stage) tables_.resize(stage + 1);
    SharedCosts::Table*& table = tables_[stage];
    if (table == nullptr) {
      table =
          shared_->TableFor(config_.sharding != DpSharding::kNone, Links(config_.dp, first_unit));
    }
    return table;
  }

  // REQUIRES: Uniform(dp, first_unit).
  SharedCosts::TimeTable* TimeTableAt(int first_unit) const {
    const size_t stage = static_cast<size_t>(first_unit / config_.dp);
    if (time_tables_.size() <= stage) time_tables_.resize(stage + 1);
    SharedCosts::TimeTable*& table = time_tables_[stage];
    if (table == nullptr) {
      table = shared_->TimesFor(config_.sharding, Links(config_.dp, first_unit));
    }
    return table;
  }

  const CostModel& model_;
  const StageCosts& costs_;
  Config config_;
  int64_t memory_limit_;
  MemoryContext context_;  // of the uniform DP's dp replicas
  SharedCosts* shared_;
  mutable std::vector<std::optional<ShardGroupLinks>> links_;
  mutable std::vector<SharedCosts::Table*> tables_;
  mutable std::vector<SharedCosts::TimeTable*> time_tables_;
  mutable std::vector<double>* boundary_row_ = nullptr;
  mutable int boundary_unit_ = -1;
};

}  // namespace trident::search_internal
