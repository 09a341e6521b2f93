// The facts torchtitan_export.cc and torchtitan_import.cc rely on: how each plan field reaches
// torchtitan, the job-file keys and model flavors of the torchtitan version they write for,
// and its pipeline schedule names.
#include "launcher/torchtitan_export.h"

namespace trident {

const std::map<std::string_view, std::string_view>& TorchtitanFieldMapping() {
  constexpr std::string_view kFlavor =
      "[model] name and flavor: the registered flavor with these dimensions";
  constexpr std::string_view kTrident = "not written (Trident's own)";
  static const std::map<std::string_view, std::string_view> mapping = {
      {"format_version", kTrident},
      {"kind", kTrident},
      {"model.name", kFlavor},
      {"model.vocab_size", kFlavor},
      {"model.max_seq_len", "torchtitan sets it to training.seq_len"},
      {"model.hidden", kFlavor},
      {"model.heads", kFlavor},
      {"model.kv_heads", kFlavor},
      {"model.ffn_hidden", kFlavor},
      {"model.norm", kFlavor},
      {"model.positions", kFlavor},
      {"model.attention",
       "flash only: torchtitan's attention is PyTorch's scaled_dot_product_attention, which "
       "keeps no scores"},
      {"model.tied_embeddings", kFlavor},
      {"model.dropout", kFlavor},
      {"model.norm_eps", kFlavor},
      {"model.rope_theta", kFlavor},
      {"model.dtype", "the preset's; the plan's dtype is what is written"},
      {"model.layers[].kind", kFlavor},
      {"model.layers[].repeat", kFlavor},
      {"cluster", "a comment"},
      {"devices", "torchrun --nnodes (devices / devices_per_node) in the launch comment"},
      {"devices_per_node", "torchrun --nproc-per-node in the launch comment"},
      {"mesh.dp",
       "parallelism.data_parallel_replicate_degree × data_parallel_shard_degree: without "
       "sharding the replicate degree (DDP, without tensor or pipeline parallelism only) and "
       "shard degree 1; with full sharding see dp_shard"},
      {"mesh.pp", "parallelism.pipeline_parallel_degree"},
      {"mesh.tp", "parallelism.tensor_parallel_degree (always with sequence parallelism)"},
      {"mesh.cp",
       "parallelism.context_parallel_degree (its default rotate method is allgather, its load "
       "balance Trident's 2·cp chunks; torchtitan shards parameters over the cp ranks with FSDP, "
       "so it holds less than Trident predicts; the computation is the same)"},
      {"virtual_stages", "the split points: pp · virtual_stages stages, looped over the ranks"},
      {"micro_batch_size",
       "parallelism.pipeline_parallel_microbatch_size with a pipeline, else "
       "training.local_batch_size"},
      {"num_micro_batches", "training.local_batch_size and global_batch_size"},
      {"global_batch", "training.global_batch_size"},
      {"seq_len", "training.seq_len"},
      {"dtype",
       "training.mixed_precision_param bfloat16 or float32; bf16 only under FSDP (full "
       "sharding or context parallelism) or without tensor and pipeline parallelism, fp16 "
       "never"},
      {"schedule",
       "parallelism.pipeline_parallel_schedule GPipe, 1F1B or Interleaved1F1B; zb_h1, "
       "pipedream and naive cannot be said (any synchronous one without a pipeline)"},
      {"dp_sharding",
       "full: FSDP, parallelism.data_parallel_shard_degree above 1 (with "
       "fsdp_reshard_after_forward always under a pipeline); none: shard degree 1; optimizer "
       "and gradients cannot be said (torchtitan shards all or nothing)"},
      {"dp_shard",
       "with full sharding, parallelism.data_parallel_shard_degree dp_shard and "
       "data_parallel_replicate_degree mesh.dp / dp_shard (HSDP); shard degree mesh.dp and "
       "replicate degree 1 without hybrid sharding"},
      {"sequence_parallel",
       "implied: torchtitan's tensor parallelism always shards the norms along the sequence; "
       "tp without it cannot be said"},
      {"stages[].first_layer", "parallelism.pipeline_parallel_split_points (layers.K)"},
      {"stages[].num_layers", "as stages[].first_layer"},
      {"stages[].replicas", "implied when uniform; per-stage replication cannot be said"},
      {"stages[].recompute",
       "activation_checkpoint.mode none or full; Trident's selective and a mix cannot be "
       "said"},
      {"stages[].predicted_time_ms", kTrident},
      {"stages[].predicted_memory_bytes", kTrident},
      {"predicted.step_time_ms", "a comment"},
      {"predicted.tokens_per_s", kTrident},
      {"predicted.bubble_fraction", kTrident},
      {"predicted.peak_memory_bytes", "a comment"},
      {"provenance.planner_version", kTrident},
      {"provenance.profile_digest", kTrident},
      {"provenance.cluster_digest", kTrident},
  };
  return mapping;
}

// torchtitan/config/job_config.py at pytorch/torchtitan 000204a (2025, before split points gave
// way to module_fqns_per_model_part); flavors of torchtitan/models/llama3/__init__.py of that
// time (8c6bf93) with model/args.py's defaults (vocab_size 128256, norm_eps 1e-5); schedule
// names of torch.distributed.pipelining's get_schedule_class.
std::string_view TorchtitanVersion() {
  return "torchtitan main of 2025, job_config.py at pytorch/torchtitan 000204a";
}

const std::vector<std::string_view>& TorchtitanKeys() {
  static const std::vector<std::string_view> keys = {
      "job.description",
      "model.name",
      "model.flavor",
      "training.local_batch_size",
      "training.global_batch_size",
      "training.seq_len",
      "training.mixed_precision_param",
      "parallelism.data_parallel_replicate_degree",
      "parallelism.data_parallel_shard_degree",
      "parallelism.fsdp_reshard_after_forward",
      "parallelism.tensor_parallel_degree",
      "parallelism.pipeline_parallel_degree",
      "parallelism.pipeline_parallel_split_points",
      "parallelism.pipeline_parallel_layers_per_stage",
      "parallelism.pipeline_parallel_schedule",
      "parallelism.pipeline_parallel_microbatch_size",
      "parallelism.context_parallel_degree",
      "parallelism.expert_parallel_degree",
      "activation_checkpoint.mode",
  };
  return keys;
}

namespace {

// A Llama 3 of torchtitan's TransformerModelArgs; ffn is FeedForward's width: 4·dim·2/3, times
// ffn_dim_multiplier, rounded up to multiple_of.
TorchtitanFlavor Llama3(std::string_view flavor, std::string name, int64_t dim, int blocks,
                        int64_t heads, int64_t ffn) {
  ModelSpec m;
  m.name = std::move(name);
  m.vocab_size = 128256;
  m.max_seq_len = 131072;
  m.hidden = dim;
  m.heads = heads;
  m.kv_heads = 8;
  m.ffn_hidden = ffn;
  m.norm = NormKind::kRmsNorm;
  m.positions = PositionKind::kRope;
  m.attention = AttentionKind::kFlash;
  m.tied_embeddings = false;
  m.norm_eps = 1e-5;
  m.rope_theta = 500000.0;
  m.dtype = DType::kBf16;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kLlamaBlock, blocks},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return {"llama3", flavor, std::move(m)};
}

}  // namespace

const std::vector<TorchtitanFlavor>& TorchtitanFlavors() {
  static const std::vector<TorchtitanFlavor> flavors = {
      Llama3("8B", "llama3-8b", 4096, 32, 32, 14336),         // multiplier 1.3, multiple 1024
      Llama3("70B", "llama3-70b", 8192, 80, 64, 28672),       // 1.3, 4096
      Llama3("405B", "llama3-405b", 16384, 126, 128, 53248),  // 1.2, 4096
  };
  return flavors;
}

std::string_view TorchtitanScheduleName(ScheduleKind schedule) {
  switch (schedule) {
    case ScheduleKind::kGpipe:
      return "GPipe";
    case ScheduleKind::k1F1B:
      return "1F1B";
    case ScheduleKind::kInterleaved1F1B:
      return "Interleaved1F1B";
    default:
      return "";
  }
}

}  // namespace trident
