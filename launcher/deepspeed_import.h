// `trident import deepspeed ds_config.json`: a DeepSpeed configuration — its ds_config.json and
// the arguments the training script gives deepspeed.pipe.PipelineModule — read back as a
// Trident plan, so `trident simulate` and `trident explain` can predict it.
//
// DeepSpeed does not define models, so the model, the sequence length and the world size come
// with the options, as do PipelineModule's num_stages, partition_method (or explicit `parts`,
// as pipeline.json of `trident export --to deepspeed` gives them) and
// activation_checkpoint_interval. From ds_config.json the keys DeepSpeed reads for a plan are
// read: train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps (any two
// give the third, as DeepSpeed derives it), zero_optimization.stage (the sharding level) and
// mics_shard_size (hybrid sharding under stage 3), bf16.enabled,
// fp16.enabled, tensor_parallel.autotp_size and pipeline.activation_checkpoint_interval; every
// other key is listed as ignored.
//
// Facts (deepspeedai/DeepSpeed v0.16.4, pinned in DeepSpeedKeys()): deepspeed/runtime/config.py
// _set_batch_related_parameters and _batch_assertion (world size there is the data-parallel size of
// the pipeline grid); deepspeed/runtime/pipe/module.py
// PipelineModule(partition_method='parameters', activation_checkpoint_interval=0) and
// _partition_layers; deepspeed/runtime/utils.py partition_uniform and partition_balanced (the
// dynamic program that minimises the spread between the heaviest and the lightest stage);
// pipe/engine.py refuses ZeRO-2 and 3 (as the import does with num_stages above 1);
// zero/mics_utils.py makes MiCS shard groups of consecutive ranks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "core/status.h"

namespace trident {

struct DeepSpeedImportOptions {
  ModelSpec model;  // the training script's model, in Trident's layer order
  std::string cluster;
  int devices = 0;           // the world size
  int devices_per_node = 0;  // 0: `devices`
  int64_t seq_len = 0;
  int num_stages = 1;  // PipelineModule num_stages: the pipeline depth
  // PipelineModule partition_method: "parameters" (its default), "uniform" or "type:REGEX"
  // (matched against Trident's layer kind names, see TypeWeights); `parts`, when
  // given, are the stages' first layers and then the layer count, as PipelineModule.parts.
  std::string partition_method = "parameters";
  std::vector<int> parts;
  // Trainable parameters of each layer of `model`, for "parameters".
  std::vector<double> layer_params;
  // PipelineModule activation_checkpoint_interval; ds_config's pipeline section overrides it.
  int activation_checkpoint_interval = 0;
};

struct DeepSpeedImport {
  Plan plan;                         // predictions and provenance empty
  std::vector<std::string> ignored;  // ds_config keys read but not part of a plan
};

// InvalidArgument naming `file` and the key or option (JSON that does not parse, a value of the
// wrong type, batch sizes DeepSpeed would refuse, sizes that do not divide the world size, a
// choice Trident has no plan for); the plan passes Plan::Check.
StatusOr<DeepSpeedImport> ImportDeepSpeed(std::string_view json_text, const std::string& file,
                                          const DeepSpeedImportOptions& options);

// DeepSpeed's partitions: `parts` + 1 start indices from 0 to `items`.
std::vector<int> PartitionUniform(int items, int parts);
std::vector<int> PartitionBalanced(const std::vector<double>& weights, int parts);

}  // namespace trident
