#include "core/plan.h"

#include <algorithm>
#include <tuple>

#include "core/check.h"
#include "core/document.h"
#include "core/limits.h"
#include "core/yaml_io.h"

namespace trident {

const NameTable<ScheduleKind>& ScheduleKindNames() {
  static const NameTable<ScheduleKind> kNames = {
      {"naive", ScheduleKind::kNaive}, {"gpipe", ScheduleKind::kGpipe},
      {"1f1b", ScheduleKind::k1F1B},   {"interleaved_1f1b", ScheduleKind::kInterleaved1F1B},
      {"zb_h1", ScheduleKind::kZbH1},  {"pipedream", ScheduleKind::kPipeDream}};
  return kNames;
}

const NameTable<DpSharding>& DpShardingNames() {
  static const NameTable<DpSharding> kNames = {{"none", DpSharding::kNone},
                                               {"optimizer", DpSharding::kOptimizer},
                                               {"gradients", DpSharding::kGradients},
                                               {"full", DpSharding::kFull}};
  return kNames;
}

bool UniformReplication(const std::vector<PlanStage>& stages) {
  return std::all_of(stages.begin(), stages.end(),
                     [&](const PlanStage& st) { return st.replicas == stages.front().replicas; });
}

bool UniformRecompute(const std::vector<PlanStage>& stages) {
  return std::all_of(stages.begin(), stages.end(),
                     [&](const PlanStage& st) { return st.recompute == stages.front().recompute; });
}

std::vector<int> Plan::PositionReplicas() const {
  std::vector<int> replicas;
  for (int p = 0; p < mesh.pp; ++p) replicas.push_back(stages[p].replicas);
  return replicas;
}

int Plan::ShardReplicas(int position) const {
  return dp_shard > 0 ? dp_shard : stages[position].replicas;
}

RankMap Plan::MakeRankMap() const {
  StatusOr<RankMap> map = RankMap::Create(mesh.tp, mesh.cp, PositionReplicas());
  TRIDENT_CHECK(map.ok()) << map.status().ToString();
  return *map;
}

namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// Every count of the plan within its limit (core/limits.h), before any arithmetic uses it.
FieldCheck CheckCounts(const Plan& p) {
  const std::tuple<const char*, int64_t, int64_t, int64_t> counts[] = {
      {"devices", p.devices, 1, limits::kMaxDevices},
      {"devices_per_node", p.devices_per_node, 1, limits::kMaxDevices},
      {"mesh.dp", p.mesh.dp, 1, limits::kMaxDevices},
      {"mesh.pp", p.mesh.pp, 1, limits::kMaxDevices},
      {"mesh.tp", p.mesh.tp, 1, limits::kMaxHeads},
      {"mesh.cp", p.mesh.cp, 1, limits::kMaxDevices},
      {"virtual_stages", p.virtual_stages, 1, limits::kMaxLayers},
      {"micro_batch_size", p.micro_batch_size, 1, limits::kMaxMicroBatch},
      {"predicted.peak_memory_bytes", p.predicted.peak_memory_bytes, 0, limits::kMaxPlanBytes}};
  for (const auto& [key, value, min, max] : counts) {
    if (FieldCheck error = CheckRange(key, value, min, max)) return error;
  }
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const PlanStage& s = p.stages[i];
    const std::string path = IndexKeyPath("stages", i);
    if (FieldCheck error =
            CheckRange(JoinKeyPath(path, "num_layers"), s.num_layers, 1, limits::kMaxLayers)) {
      return error;
    }
    if (FieldCheck error =
            CheckRange(JoinKeyPath(path, "replicas"), s.replicas, 1, limits::kMaxDevices)) {
      return error;
    }
    if (FieldCheck error = CheckRange(JoinKeyPath(path, "predicted_memory_bytes"),
                                      s.predicted_memory_bytes, 0, limits::kMaxPlanBytes)) {
      return error;
    }
  }
  return std::nullopt;
}

FieldCheck CheckMesh(const Plan& p) {
  if (std::string problem = p.model.TensorParallelProblem(p.mesh.tp); !problem.empty()) {
    return FieldError{"mesh.tp", problem, "choose a tp that divides the model's heads"};
  }
  if (p.devices_per_node % p.mesh.tp != 0) {
    return FieldError{"mesh.tp",
                      "tp " + Str(p.mesh.tp) + " does not divide " + Str(p.devices_per_node) +
                          " devices per node, so a tp group would span nodes",
                      "use a tp that divides devices_per_node"};
  }
  if (p.sequence_parallel && p.mesh.tp == 1) {
    return FieldError{"sequence_parallel", "needs tp > 1: it splits what tp leaves whole",
                      "set it to false, or plan with --fix tp=2 or more"};
  }
  if (p.mesh.cp > 1 && p.seq_len % (2 * p.mesh.cp) != 0) {
    return FieldError{"mesh.cp",
                      "cp " + Str(p.mesh.cp) + " cannot split seq_len " + Str(p.seq_len) +
                          " into 2·cp = " + Str(2 * p.mesh.cp) +
                          " equal chunks (each cp rank holds two, for causal balance)",
                      "use a cp with 2·cp dividing seq_len"};
  }
  const int64_t local_seq = p.seq_len / p.mesh.cp;  // the tokens of a sequence on one cp rank
  if (p.sequence_parallel && local_seq % p.mesh.tp != 0) {
    return FieldError{"sequence_parallel",
                      "tp " + Str(p.mesh.tp) + " does not divide the " + Str(local_seq) +
                          " tokens of a sequence on each rank (seq_len " + Str(p.seq_len) +
                          " / cp " + Str(p.mesh.cp) + ")",
                      "set it to false, or use a seq_len that cp · tp divides"};
  }
  return std::nullopt;
}

FieldCheck CheckStageLayers(const Plan& p) {
  size_t want = static_cast<size_t>(p.mesh.pp) * p.virtual_stages;
  if (p.stages.size() != want) {
    return FieldError{
        "stages",
        "has " + Str(p.stages.size()) + " stages but mesh.pp · virtual_stages = " + Str(want),
        "list one stage per pipeline position and virtual stage"};
  }
  int64_t next = 0;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const PlanStage& s = p.stages[i];
    std::string path = IndexKeyPath("stages", i);
    if (s.first_layer != next) {
      return FieldError{
          JoinKeyPath(path, "first_layer"),
          "expected " + Str(next) + " (stages are contiguous), got " + Str(s.first_layer), ""};
    }
    next += s.num_layers;
  }
  if (next != p.model.NumLayers()) {
    return FieldError{
        "stages", "cover " + Str(next) + " layers but the model has " + Str(p.model.NumLayers()),
        "the last stage must end at the model's last layer"};
  }
  return std::nullopt;
}

FieldCheck CheckReplicas(const Plan& p) {
  int max_replicas = 0;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const PlanStage& s = p.stages[i];
    std::string path = JoinKeyPath(IndexKeyPath("stages", i), "replicas");
    if (s.replicas != p.stages[i % p.mesh.pp].replicas) {
      return FieldError{path, "virtual stages of one pipeline position must share replicas", ""};
    }
    if (s.replicas > p.num_micro_batches) {
      return FieldError{
          path,
          Str(s.replicas) + " replicas but a step has " + Str(p.num_micro_batches) +
              " micro-batches, and each replica needs at least one",
          "use at most " + Str(p.num_micro_batches) + " replicas or raise num_micro_batches"};
    }
    max_replicas = std::max(max_replicas, s.replicas);
  }
  if (p.mesh.dp != max_replicas) {
    return FieldError{
        "mesh.dp",
        "must equal the largest stage replication " + Str(max_replicas) + ", got " + Str(p.mesh.dp),
        ""};
  }
  int64_t devices = 0;
  for (int r : p.PositionReplicas()) devices += int64_t{r} * p.mesh.cp * p.mesh.tp;
  if (devices != p.devices) {
    return FieldError{"devices",
                      "the mesh uses cp · tp · Σ replicas = " + Str(devices) +
                          " devices but devices is " + Str(p.devices),
                      "with uniform replication devices = dp · pp · cp · tp"};
  }
  return std::nullopt;
}

FieldCheck CheckBatch(const Plan& p) {
  if (p.num_micro_batches < 1 || p.num_micro_batches > Plan::kMaxMicroBatches) {
    return FieldError{
        "num_micro_batches",
        "must be in [1, " + Str(Plan::kMaxMicroBatches) + "], got " + Str(p.num_micro_batches),
        "use a larger micro_batch_size"};
  }
  if (p.global_batch != int64_t{p.micro_batch_size} * p.num_micro_batches) {
    return FieldError{"global_batch",
                      Str(p.global_batch) + " != micro_batch_size " + Str(p.micro_batch_size) +
                          " × num_micro_batches " + Str(p.num_micro_batches),
                      "num_micro_batches counts the micro-batches of all replicas together"};
  }
  if (p.seq_len < 1 || p.seq_len > p.model.max_seq_len) {
    return FieldError{"seq_len",
                      "must be in [1, " + Str(p.model.max_seq_len) + "], got " + Str(p.seq_len),
                      "the model's max_seq_len bounds it"};
  }
  if (p.micro_batch_size * p.seq_len > limits::kMaxMicroBatchTokens) {
    return FieldError{"micro_batch_size",
                      "micro_batch_size " + Str(p.micro_batch_size) + " × seq_len " +
                          Str(p.seq_len) + " tokens is more than the limit " +
                          Str(limits::kMaxMicroBatchTokens),
                      "Trident's limit for one micro-batch (core/README.md, Limits)"};
  }
  return std::nullopt;
}

// Rules of the schedules whose replicas need equal micro-batch counts (plan.h).
FieldCheck CheckEqualLanes(const Plan& p) {
  const bool interleaved = p.schedule == ScheduleKind::kInterleaved1F1B;
  const std::string& name = NameOf(ScheduleKindNames(), p.schedule);
  for (int position = 0; position < p.mesh.pp; ++position) {
    const int r = p.stages[position].replicas;
    const std::string path = JoinKeyPath(IndexKeyPath("stages", position), "replicas");
    if (p.schedule == ScheduleKind::kNaive && r != p.num_micro_batches) {
      return FieldError{"schedule",
                        "naive model parallelism runs one micro-batch per replica, so every "
                        "stage needs num_micro_batches (" +
                            Str(p.num_micro_batches) + ") replicas; stage " + Str(position) +
                            " has " + Str(r),
                        "set every stage's replicas to num_micro_batches or use gpipe / 1f1b"};
    }
    if ((interleaved || p.schedule == ScheduleKind::kPipeDream) && p.num_micro_batches % r != 0) {
      return FieldError{path,
                        Str(r) + " replicas do not divide " + Str(p.num_micro_batches) +
                            " micro-batches; " + name + " needs the same count on every replica",
                        "pick num_micro_batches as a multiple of every stage's replicas, or use "
                        "1f1b, gpipe or zb_h1 (micro-batches round robin over replicas)"};
    }
    if (interleaved && (p.num_micro_batches / r) % p.mesh.pp != 0) {
      return FieldError{"num_micro_batches",
                        "interleaved_1f1b needs the micro-batches per replica (" +
                            Str(p.num_micro_batches / r) + " at stage " + Str(position) +
                            ") to be a multiple of pp " + Str(p.mesh.pp),
                        ""};
    }
  }
  return std::nullopt;
}

FieldCheck CheckSchedule(const Plan& p) {
  bool interleaved = p.schedule == ScheduleKind::kInterleaved1F1B;
  if (interleaved && p.virtual_stages < 2) {
    return FieldError{"schedule", "interleaved_1f1b needs virtual_stages >= 2",
                      "set virtual_stages: 2 or use schedule: 1f1b"};
  }
  if (!interleaved && p.virtual_stages != 1) {
    return FieldError{"virtual_stages", "only interleaved_1f1b runs virtual stages",
                      "set virtual_stages: 1 or schedule: interleaved_1f1b"};
  }
  return CheckEqualLanes(p);
}

FieldCheck CheckSharding(const Plan& p) {
  const bool sharded = p.dp_sharding != DpSharding::kNone;
  if (sharded && p.mesh.dp == 1) {
    return FieldError{"dp_sharding",
                      NameOf(DpShardingNames(), p.dp_sharding) +
                          " shards over the data-parallel replicas, and mesh.dp is 1",
                      "set dp_sharding: none, or plan with dp > 1"};
  }
  if (p.dp_sharding >= DpSharding::kGradients) {
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const int r = p.stages[s].replicas;
      if (p.num_micro_batches % r == 0) continue;
      return FieldError{JoinKeyPath(IndexKeyPath("stages", s), "replicas"),
                        Str(r) + " replicas do not divide " + Str(p.num_micro_batches) +
                            " micro-batches; " + NameOf(DpShardingNames(), p.dp_sharding) +
                            " sharding sums each micro-batch's gradients over the replicas "
                            "together, so each needs the same count",
                        "pick num_micro_batches as a multiple of every stage's replicas, or "
                        "dp_sharding none or optimizer"};
    }
  }
  if (p.dp_shard == 0) return std::nullopt;
  if (!sharded) {
    return FieldError{"dp_shard",
                      "hybrid sharding of " + Str(p.dp_shard) + " replicas needs a dp_sharding",
                      "set dp_shard: " + Str(p.mesh.dp) + " (mesh.dp), or a dp_sharding level"};
  }
  if (p.dp_shard < 2 || p.dp_shard > p.mesh.dp || p.mesh.dp % p.dp_shard != 0) {
    return FieldError{"dp_shard",
                      "dp_shard " + Str(p.dp_shard) + " does not divide mesh.dp " + Str(p.mesh.dp) +
                          " into shard groups of two or more replicas",
                      "use a divisor of mesh.dp from 2 to mesh.dp (mesh.dp: no hybrid)"};
  }
  if (!UniformReplication(p.stages)) {
    return FieldError{"dp_shard", "hybrid sharding needs every stage to have mesh.dp replicas",
                      "set dp_shard: " + Str(p.mesh.dp) + ", or replicate every stage alike"};
  }
  return std::nullopt;
}

FieldCheck CheckPrediction(const Plan& p) {
  const PlanPrediction& q = p.predicted;
  if (q.step_time_ms < 0 || q.tokens_per_s < 0) {
    return FieldError{"predicted", "predictions must not be negative", ""};
  }
  for (size_t i = 0; i < p.stages.size(); ++i) {
    if (p.stages[i].predicted_time_ms < 0) {
      return FieldError{JoinKeyPath(IndexKeyPath("stages", i), "predicted_time_ms"),
                        "must not be negative", ""};
    }
  }
  if (q.bubble_fraction < 0 || q.bubble_fraction > 1) {
    return FieldError{"predicted.bubble_fraction", "must be in [0, 1]", ""};
  }
  return std::nullopt;
}

}  // namespace

FieldCheck Plan::Check() const {
  if (FieldCheck error = model.Check()) {
    error->key_path = JoinKeyPath("model", error->key_path);
    return error;
  }
  for (const auto& check : {CheckCounts, CheckMesh, CheckStageLayers, CheckBatch, CheckReplicas,
                            CheckSchedule, CheckSharding, CheckPrediction}) {
    if (FieldCheck error = check(*this)) return error;
  }
  return std::nullopt;
}

std::string Plan::ToString() const {
  return model.name + " on " + Str(devices) + " devices: dp " + Str(mesh.dp) + " × pp " +
         Str(mesh.pp) + (mesh.cp > 1 ? " × cp " + Str(mesh.cp) : "") + " × tp " + Str(mesh.tp) +
         (sequence_parallel ? " + sp" : "") + ", " + NameOf(ScheduleKindNames(), schedule) +
         ", micro-batch " + Str(micro_batch_size) + " × " + Str(num_micro_batches) + ", seq " +
         Str(seq_len) + ShardingText();
}

std::string Plan::ShardingText() const {
  if (dp_sharding == DpSharding::kNone) return "";
  const std::string groups = dp_shard > 0 ? " in groups of " + Str(dp_shard) : "";
  return ", dp_sharding " + NameOf(DpShardingNames(), dp_sharding) + groups;
}
}  // namespace trident
