// `trident export PLAN --to deepspeed -o DIR`: a plan as DeepSpeed's configuration —
// DIR/ds_config.json (batch sizes, gradient accumulation, ZeRO stage, precision, AutoTP, the
// pipeline engine's activation-checkpoint interval), DIR/pipeline.json (the stage count and
// each stage's first layer for deepspeed.pipe.PipelineModule) and DIR/launch.sh (the `deepspeed`
// launcher) — or each of the plan's choices DeepSpeed cannot express, with its field and why.
//
// Facts (deepspeedai/DeepSpeed v0.16.4, pinned in DeepSpeedKeys()): train_batch_size = micro-batch
// × gradient accumulation × data-parallel size, and the pipeline engine runs
// gradient-accumulation-steps micro-batches per step with its 1F1B TrainSchedule, no interleaved or
// zero-bubble schedule; ZeRO-2 and 3 are refused by the pipeline engine, so a plan sharding
// gradients or parameters runs without a PipelineModule; ZeRO stage 3's hybrid shard groups are
// MiCS's (mics_shard_size, consecutive ranks); PipelineModule's partition_method takes "uniform",
// "parameters" or "type:regex", never explicit cuts, so pipeline.json gives them for a
// PipelineModule whose _partition_layers sets `parts` from it (launcher/README.md shows how);
// tensor parallelism is AutoTP ("tensor_parallel": {"autotp_size"}, deepspeed >= 0.16.4),
// documented without pipeline parallelism; activation checkpointing is every k layers
// (activation_checkpoint_interval), with no selective form.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/field_error.h"
#include "core/plan.h"

namespace trident {

struct DeepSpeedExport {
  nlohmann::json ds_config;
  nlohmann::json pipeline;  // num_stages, parts (first layer of each stage, then the end)
  std::string launch;       // launch.sh
  std::vector<FieldError> inexpressible;
};

// REQUIRES: plan.Check() passed.
DeepSpeedExport ExportDeepSpeed(const Plan& plan, const std::string& plan_path);

// Every field of core/plan_fields.h: how the export writes it, or why it does not.
const std::map<std::string_view, std::string_view>& DeepSpeedFieldMapping();

// The ds_config.json keys of a plan ("section.key" for nested ones), as DeepSpeed's
// runtime/config.py, runtime/pipe/engine.py and runtime/tensor_parallel/config.py read them:
// the export writes only these, the import reads these and lists any other as ignored.
const std::vector<std::string_view>& DeepSpeedKeys();

}  // namespace trident
