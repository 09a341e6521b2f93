#include "launcher/deepspeed_export.h"

#include "core/text_format.h"
#include "launcher/placement.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

void Inexpressible(DeepSpeedExport* out, std::string path, std::string why, std::string fix) {
  out->inexpressible.push_back({std::move(path), std::move(why), std::move(fix)});
}

// DeepSpeed's pipeline engine runs 1F1B (TrainSchedule); without a pipeline every synchronous
// schedule is the same computation.
void CheckSchedule(const Plan& plan, DeepSpeedExport* out) {
  const ScheduleKind s = plan.schedule;
  const bool synchronous = s != ScheduleKind::kPipeDream && s != ScheduleKind::kNaive;
  if (plan.virtual_stages > 1) {
    Inexpressible(out, "virtual_stages", "DeepSpeed's pipeline engine has no interleaved schedule",
                  "plan with --schedule 1f1b");
  } else if (s != ScheduleKind::k1F1B && !(plan.mesh.pp == 1 && synchronous)) {
    Inexpressible(out, "schedule",
                  "DeepSpeed's pipeline engine runs 1F1B, not " + NameOf(ScheduleKindNames(), s),
                  "plan with --schedule 1f1b");
  }
}

// The pipeline engine's activation_checkpoint_interval: 1 checkpoints every layer, 0 none.
int CheckpointInterval(const Plan& plan, DeepSpeedExport* out) {
  const RecomputeMode mode = plan.stages.front().recompute;
  if (!UniformRecompute(plan.stages)) {
    Inexpressible(out, "stages[].recompute",
                  "DeepSpeed checkpoints every stage at one interval; the plan's stages differ",
                  "plan with one --recompute mode");
  } else if (mode == RecomputeMode::kSelective) {
    Inexpressible(out, "stages[].recompute",
                  "DeepSpeed has no selective recompute (only every k layers)",
                  "plan with --recompute none,full");
  }
  return mode == RecomputeMode::kFull ? 1 : 0;
}

// zero_optimization: the stage is the sharding level (0 none, 1 optimizer, 2 gradients, 3 full).
// DeepSpeed's PipelineEngine refuses stages 2 and 3 (runtime/pipe/engine.py), with any
// PipelineModule. Its hybrid shard groups are MiCS's (stage 3, mics_shard_size): consecutive
// global ranks (runtime/zero/mics_utils.py), Trident's shard groups when each rank is a replica,
// so without tensor parallelism.
nlohmann::json ZeroOptimization(const Plan& plan, DeepSpeedExport* out) {
  const DpSharding level = plan.dp_sharding;
  nlohmann::json z = {{"stage", static_cast<int>(level)}};
  if (plan.mesh.pp > 1 && level >= DpSharding::kGradients) {
    Inexpressible(out, "dp_sharding",
                  "DeepSpeed's pipeline engine refuses ZeRO stage " + Str(static_cast<int>(level)) +
                      " (zero_optimization.stage below 2 only)",
                  "plan with --fix pp=1, or shard the optimizer state alone");
  }
  if (plan.dp_shard == 0 || plan.dp_shard == plan.mesh.dp) return z;
  if (level != DpSharding::kFull) {
    Inexpressible(out, "dp_shard",
                  "DeepSpeed shards ZeRO stages 1 and 2 over the whole data-parallel group; its "
                  "hybrid groups (MiCS, zero_optimization.mics_shard_size) are stage 3's",
                  "plan with dp_shard " + Str(plan.mesh.dp) + " (no hybrid sharding)");
  } else if (plan.mesh.tp > 1) {
    Inexpressible(out, "dp_shard",
                  "MiCS shard groups (zero_optimization.mics_shard_size) are consecutive global "
                  "ranks, which with tensor parallelism (AutoTP) are not replicas",
                  "plan with --fix tp=1, or dp_shard " + Str(plan.mesh.dp));
  } else {
    z["mics_shard_size"] = plan.dp_shard;
  }
  return z;
}

// ds_config.json's parallel, batch, precision and checkpointing keys.
nlohmann::json DsConfig(const Plan& plan, DeepSpeedExport* out) {
  const int dp = plan.mesh.dp;
  nlohmann::json c;
  c["train_batch_size"] = plan.global_batch;
  c["train_micro_batch_size_per_gpu"] = plan.micro_batch_size;
  c["gradient_accumulation_steps"] = plan.num_micro_batches / dp;
  c["zero_optimization"] = ZeroOptimization(plan, out);
  if (plan.dtype == DType::kBf16) c["bf16"] = {{"enabled", true}};
  if (plan.dtype == DType::kFp16) c["fp16"] = {{"enabled", true}};
  if (plan.sequence_parallel) {
    Inexpressible(out, "sequence_parallel",
                  "DeepSpeed's pipeline engine and AutoTP have no sequence parallelism",
                  "plan with --sequence-parallel off");
  }
  if (plan.mesh.cp > 1) {
    Inexpressible(out, "mesh.cp",
                  "DeepSpeed's sequence parallelism (Ulysses) is another scheme: all-to-all "
                  "over attention heads, not Megatron's chunks with gathered keys and values",
                  "plan with --fix cp=1");
  }
  if (plan.mesh.tp > 1) {
    c["tensor_parallel"] = {{"autotp_size", plan.mesh.tp}};
    if (plan.mesh.pp > 1) {
      Inexpressible(out, "mesh.tp",
                    "DeepSpeed's tensor parallelism (AutoTP) is not documented with its pipeline "
                    "engine",
                    "plan with --fix tp=1 or --fix pp=1");
    }
  }
  c["pipeline"] = {{"activation_checkpoint_interval", CheckpointInterval(plan, out)}};
  return c;
}

// pipeline.json: the stages' first layers (Trident's layer indices: the embedding, each block,
// the final norm and the head are one layer each).
nlohmann::json Pipeline(const Plan& plan) {
  nlohmann::json parts = nlohmann::json::array();
  for (const PlanStage& s : plan.stages) parts.push_back(s.first_layer);
  parts.push_back(plan.model.NumLayers());
  return {{"num_stages", plan.mesh.pp}, {"parts", parts}};
}

// What the training script builds: a PipelineModule, or, for ZeRO stages 2 and 3 (which the
// pipeline engine refuses), the model itself; under MiCS, inside deepspeed.zero.MiCS_Init.
std::string ModelComment(const Plan& plan) {
  if (plan.dp_sharding < DpSharding::kGradients) {
    return "# TRAIN_SCRIPT builds deepspeed.pipe.PipelineModule(layers, num_stages=" +
           Str(plan.mesh.pp) +
           ", ...) whose layers are the\n"
           "# model's in Trident's order and whose stages start at pipeline.json's parts.\n";
  }
  const bool mics = plan.dp_shard > 0 && plan.dp_shard < plan.mesh.dp;
  return std::string(
             "# TRAIN_SCRIPT gives deepspeed.initialize the model itself, not a PipelineModule\n"
             "# (DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3)") +
         (mics ? ", built inside deepspeed.zero.MiCS_Init.\n" : ".\n");
}

std::string Launch(const Plan& plan, const std::string& plan_path) {
  const std::vector<int> sizes = PlanNodeSizes(plan);  // whole nodes: checked by the export
  const int per_node = sizes.front();
  const int nodes = static_cast<int>(sizes.size());
  return "#!/usr/bin/env bash\n"
         "# DeepSpeed launch of " +
         plan_path +
         " (trident export --to deepspeed)\n"
         "# " +
         plan.ToString() +
         "\n"
         "# Trident predicts " +
         FormatMs(plan.predicted.step_time_ms) + " a step.\n" + ModelComment(plan) +
         "set -euo pipefail\n"
         "exec deepspeed --num_nodes " +
         Str(nodes) + " --num_gpus " + Str(per_node) +
         " \"${TRAIN_SCRIPT:-train.py}\" --deepspeed \\\n"
         "  --deepspeed_config \"$(dirname \"$0\")/ds_config.json\" \"$@\"\n";
}

}  // namespace

DeepSpeedExport ExportDeepSpeed(const Plan& plan, const std::string& plan_path) {
  DeepSpeedExport out;
  CheckSchedule(plan, &out);
  if (!UniformReplication(plan.stages)) {
    Inexpressible(&out, "stages[].replicas",
                  "DeepSpeed replicates every pipeline stage alike (data parallel size world / "
                  "(pp · tp))",
                  "plan without per-stage replication");
  }
  if (const std::vector<int> nodes = PlanNodeSizes(plan); nodes.back() != nodes.front()) {
    Inexpressible(&out, "devices",
                  Str(plan.devices) + " devices do not fill nodes of " +
                      Str(plan.devices_per_node) + ", and the launcher starts as many on each",
                  "plan for a whole number of nodes");
  }
  out.ds_config = DsConfig(plan, &out);
  out.pipeline = Pipeline(plan);
  out.launch = Launch(plan, plan_path);
  return out;
}

}  // namespace trident
