// Plan: the contract between the planner, the launcher and the runtime — how one model is
// split over a mesh of devices, how it is scheduled, and what the planner predicts.
//
// Batch arithmetic: `num_micro_batches` (M) counts every micro-batch of one step across all
// replicas, so global_batch = micro_batch_size · num_micro_batches.
//
// Stages: pp · virtual_stages contiguous layer ranges in model order. With virtual stages
// (interleaved 1F1B) pipeline position p runs stages p, p + pp, p + 2·pp, ...
// Replication: a stage's `replicas` (PipeDream-style) may differ between positions; mesh.dp
// is the largest of them and devices = cp · tp · Σ over positions of their replication. Micro-batch
// j of a stage with r replicas runs on replica j mod r (round robin, core/replica_lanes.h), so
// replica d runs ceil((M − d) / r) of them; each replica needs one, so 1 <= r <= M. gpipe,
// 1f1b and zb_h1 take any such r. Three schedules need more of every position:
// - pipedream: r divides M, because a position's replicas sum the gradients of every update
//   (one blocking sum per backward), so each must run as many backwards;
// - interleaved_1f1b: r divides M and M / r is a multiple of pp, because the schedule runs a
//   replica's micro-batches in groups of pp, and round-robin counts (which differ by at most
//   one) are all multiples of a pp >= 2 only when they are equal;
// - naive: r = M (one micro-batch per replica).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/field_error.h"
#include "core/limits.h"
#include "core/mesh.h"
#include "core/model_spec.h"
#include "core/names.h"
#include "core/rank_map.h"
#include "core/recompute.h"
#include "core/status.h"

namespace trident {

enum class ScheduleKind { kNaive, kGpipe, k1F1B, kInterleaved1F1B, kZbH1, kPipeDream };
const NameTable<ScheduleKind>& ScheduleKindNames();

// Sharded data parallelism: what each rank of a shard group keeps 1/n of, n the group's ranks.
// ZeRO stages 1, 2 and 3 (the last is FSDP): the optimizer state; also the gradients; also the
// parameters. A position's shard group is its grad group (RankMap::GradGroup: its replicas,
// each with its cp ranks), or with hybrid sharding (Plan::dp_shard) dp_shard of those replicas.
enum class DpSharding { kNone, kOptimizer, kGradients, kFull };
const NameTable<DpSharding>& DpShardingNames();  // "none", "optimizer", "gradients", "full"

struct PlanStage {
  int first_layer = 0;
  int num_layers = 1;
  int replicas = 1;
  RecomputeMode recompute = RecomputeMode::kNone;
  double predicted_time_ms = 0;        // forward + backward of one micro-batch
  int64_t predicted_memory_bytes = 0;  // peak per rank of this stage
  bool operator==(const PlanStage&) const = default;
};

struct PlanPrediction {
  double step_time_ms = 0;
  double tokens_per_s = 0;
  double bubble_fraction = 0;
  int64_t peak_memory_bytes = 0;  // the largest over all ranks
  bool operator==(const PlanPrediction&) const = default;
};

struct Provenance {
  std::string planner_version;
  std::string profile_digest;  // "" for hand-written plans
  std::string cluster_digest;
  bool operator==(const Provenance&) const = default;
};

struct Plan {
  static constexpr int kFormatVersion = 1;
  // Most micro-batches in one step: beyond it a bigger micro-batch is the better plan, and
  // replaying the schedule would take too long.
  static constexpr int kMaxMicroBatches = limits::kMaxMicroBatches;

  ModelSpec model;  // embedded, so a rank needs only the plan and the data
  std::string cluster;
  int devices = 1;
  int devices_per_node = 1;
  Mesh mesh;
  int virtual_stages = 1;
  int micro_batch_size = 1;
  int num_micro_batches = 1;
  int64_t global_batch = 1;
  int64_t seq_len = 1;
  DType dtype = DType::kFp32;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  DpSharding dp_sharding = DpSharding::kNone;
  // Hybrid sharding: the replicas of one shard group (consecutive dp indices); the groups hold
  // replicated copies of the same shards. 0: every replica, no hybrid (the file writes mesh.dp,
  // and reading mesh.dp gives 0). REQUIRES: 1 < dp_shard < mesh.dp divides mesh.dp, every
  // position has mesh.dp replicas, and dp_sharding is not none.
  int dp_shard = 0;
  // Megatron's sequence parallelism inside every tp group (models/layer_shapes.h).
  // REQUIRES: mesh.tp > 1 dividing seq_len / mesh.cp when set.
  // Context parallelism (mesh.cp > 1) splits each sequence into 2·cp chunks; cp rank i holds
  // chunks i and 2·cp − 1 − i (runtime/train/README.md). REQUIRES: 2·cp divides seq_len.
  bool sequence_parallel = false;
  std::vector<PlanStage> stages;
  PlanPrediction predicted;
  Provenance provenance;

  bool operator==(const Plan&) const = default;

  // The replicas of position p's shard group (see dp_shard). REQUIRES: Check() passed.
  int ShardReplicas(int position) const;

  // Replication of each pipeline position. REQUIRES: Check() passed.
  std::vector<int> PositionReplicas() const;
  // REQUIRES: Check() passed.
  RankMap MakeRankMap() const;

  FieldCheck Check() const;
  Status Validate() const { return ToStatus(Check()); }
  std::string ToString() const;
  // ", dp_sharding LEVEL" (with " in groups of N" for hybrid groups), or "" without sharding.
  std::string ShardingText() const;
};

// Whether every stage has the same replica count (uniform replication).
bool UniformReplication(const std::vector<PlanStage>& stages);
// Whether every stage has the same recompute mode.
bool UniformRecompute(const std::vector<PlanStage>& stages);

StatusOr<Plan> ParsePlan(std::string_view text, const std::string& file);
StatusOr<Plan> LoadPlan(const std::string& path);
std::string PlanToYaml(const Plan& plan);

}  // namespace trident
