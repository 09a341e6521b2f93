// How each plan field reaches DeepSpeed (deepspeed_export.h).
#include "launcher/deepspeed_export.h"

namespace trident {

const std::map<std::string_view, std::string_view>& DeepSpeedFieldMapping() {
  constexpr std::string_view kModel = "the training script's: DeepSpeed does not define models";
  constexpr std::string_view kTrident = "not written (Trident's own)";
  static const std::map<std::string_view, std::string_view> mapping = {
      {"format_version", kTrident},
      {"kind", kTrident},
      {"model.name", kModel},
      {"model.vocab_size", kModel},
      {"model.max_seq_len", kModel},
      {"model.hidden", kModel},
      {"model.heads", kModel},
      {"model.kv_heads", kModel},
      {"model.ffn_hidden", kModel},
      {"model.norm", kModel},
      {"model.positions", kModel},
      {"model.attention", kModel},
      {"model.tied_embeddings", kModel},
      {"model.dropout", kModel},
      {"model.norm_eps", kModel},
      {"model.rope_theta", kModel},
      {"model.dtype", "the preset's; the plan's dtype is what is written"},
      {"model.layers[].kind", "the PipelineModule's layers, in this order (pipeline.json parts)"},
      {"model.layers[].repeat", "as model.layers[].kind"},
      {"cluster", kTrident},
      {"devices",
       "deepspeed --num_nodes (devices / devices_per_node); a partial node cannot be said"},
      {"devices_per_node", "deepspeed --num_gpus"},
      {"mesh.dp", "implied: world / (pp · tp)"},
      {"mesh.pp", "pipeline.json num_stages (PipelineModule num_stages)"},
      {"mesh.tp", "tensor_parallel.autotp_size, without pipeline parallelism only"},
      {"mesh.cp",
       "cannot be said above 1: DeepSpeed's Ulysses sequence parallelism is all-to-all over "
       "heads, another scheme"},
      {"virtual_stages", "cannot be said: no interleaved schedule"},
      {"micro_batch_size", "train_micro_batch_size_per_gpu"},
      {"num_micro_batches", "gradient_accumulation_steps (micro-batches / dp)"},
      {"global_batch", "train_batch_size"},
      {"seq_len", "the training script's data"},
      {"dtype", "bf16.enabled or fp16.enabled"},
      {"schedule", "1f1b (TrainSchedule); others only without a pipeline"},
      {"dp_sharding",
       "zero_optimization.stage: 0 none, 1 optimizer, 2 gradients, 3 full; 2 and 3 without a "
       "pipeline only (the pipeline engine refuses them)"},
      {"dp_shard",
       "zero_optimization.mics_shard_size with full sharding and tp 1 (MiCS: shard groups of "
       "consecutive ranks); other hybrid sharding cannot be said"},
      {"sequence_parallel",
       "cannot be said: DeepSpeed's pipeline engine has no sequence parallelism"},
      {"stages[].first_layer", "pipeline.json parts"},
      {"stages[].num_layers", "pipeline.json parts"},
      {"stages[].replicas", "implied when uniform; per-stage replication cannot be said"},
      {"stages[].recompute",
       "ds_config pipeline.activation_checkpoint_interval: 0 none, 1 full; selective or a mix "
       "cannot be said"},
      {"stages[].predicted_time_ms", kTrident},
      {"stages[].predicted_memory_bytes", kTrident},
      {"predicted.step_time_ms", "a comment in launch.sh"},
      {"predicted.tokens_per_s", kTrident},
      {"predicted.bubble_fraction", kTrident},
      {"predicted.peak_memory_bytes", kTrident},
      {"provenance.planner_version", kTrident},
      {"provenance.profile_digest", kTrident},
      {"provenance.cluster_digest", kTrident},
  };
  return mapping;
}

// The ds_config keys Trident writes and reads, DeepSpeed's as of release v0.16.4
// (deepspeedai/DeepSpeed tag v0.16.4, February 2025): the first release with AutoTP training,
// whose tensor_parallel.autotp_size is read by deepspeed/runtime/tensor_parallel/config.py
// TPTrainingConfig (pull request #6922; DeepSpeed's AutoTP blog names "deepspeed >= 0.16.4");
// the others are older and unchanged there: the batch keys in runtime/config.py
// (_set_batch_related_parameters), zero_optimization.stage and mics_shard_size in
// runtime/zero/config.py (MiCS from v0.9.0), bf16.enabled and fp16.enabled, and
// pipeline.activation_checkpoint_interval in runtime/config.py's pipeline section.
const std::vector<std::string_view>& DeepSpeedKeys() {
  static const std::vector<std::string_view> keys = {"train_batch_size",
                                                     "train_micro_batch_size_per_gpu",
                                                     "gradient_accumulation_steps",
                                                     "zero_optimization.stage",
                                                     "zero_optimization.mics_shard_size",
                                                     "bf16.enabled",
                                                     "fp16.enabled",
                                                     "tensor_parallel.autotp_size",
                                                     "pipeline.activation_checkpoint_interval"};
  return keys;
}

}  // namespace trident
