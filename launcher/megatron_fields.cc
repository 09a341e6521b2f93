// The facts megatron_export.cc relies on: how each plan field reaches Megatron-LM, and the flag
// names of the Megatron-LM version it writes for.
#include "launcher/megatron_export.h"

namespace trident {

const std::map<std::string_view, std::string_view>& MegatronFieldMapping() {
  static const std::map<std::string_view, std::string_view> mapping = {
      {"format_version", "the plan file's own; nothing to say"},
      {"kind", "the plan file's own; nothing to say"},
      {"model.name", "a comment"},
      {"model.vocab_size",
       "a comment: Megatron-LM takes the vocabulary from the tokenizer given to the script"},
      {"model.max_seq_len", "--max-position-embeddings"},
      {"model.hidden", "--hidden-size"},
      {"model.heads", "--num-attention-heads"},
      {"model.kv_heads", "--group-query-attention --num-query-groups when below heads"},
      {"model.ffn_hidden", "--ffn-hidden-size"},
      {"model.norm", "--normalization LayerNorm or RMSNorm"},
      {"model.positions", "--position-embedding-type learned_absolute or rope"},
      {"model.attention", "--attention-backend flash or unfused"},
      {"model.tied_embeddings", "--untie-embeddings-and-output-weights when false"},
      {"model.dropout", "--hidden-dropout and --attention-dropout"},
      {"model.norm_eps", "--norm-epsilon"},
      {"model.rope_theta", "--rotary-base (RoPE only; a whole number)"},
      {"model.dtype", "the preset's; the plan's dtype is what is written"},
      {"model.layers[].kind",
       "--num-layers counts the blocks; llama_block adds --swiglu --disable-bias-linear; "
       "gpt_block is Megatron-LM's default block (its GELU is exact, gpt_block's the tanh "
       "form: they differ by under 1e-3); other shapes cannot be said"},
      {"model.layers[].repeat", "counted into --num-layers"},
      {"cluster", "a comment"},
      {"devices", "torchrun --nnodes (devices / devices_per_node); a partial node cannot be said"},
      {"devices_per_node", "torchrun --nproc-per-node"},
      {"mesh.dp", "implied: world size / (tp · pp · cp)"},
      {"mesh.cp",
       "--context-parallel-size with --cp-comm-type allgather (Llama 3's K/V all-gather) when "
       "above 1; Megatron-LM orders ranks tp, cp, dp, pp as Trident does"},
      {"mesh.pp", "--pipeline-model-parallel-size"},
      {"mesh.tp", "--tensor-model-parallel-size"},
      {"virtual_stages", "--num-virtual-stages-per-pipeline-rank when above 1"},
      {"micro_batch_size", "--micro-batch-size"},
      {"num_micro_batches", "implied: global batch / (micro-batch · dp)"},
      {"global_batch", "--global-batch-size"},
      {"seq_len", "--seq-length"},
      {"dtype", "--bf16 or --fp16 (nothing for fp32)"},
      {"schedule",
       "1f1b: Megatron-LM's default; interleaved_1f1b: virtual stages; gpipe, zb_h1, "
       "pipedream and naive cannot be said (any synchronous one without a pipeline)"},
      {"dp_sharding",
       "optimizer: --use-distributed-optimizer; gradients and full: Megatron FSDP "
       "(--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads or "
       "optim_grads_params, with --use-distributed-optimizer and --ckpt-format fsdp_dtensor, "
       "which it requires); the overlap Trident's cost model assumes: --overlap-grad-reduce for "
       "gradients and full, --overlap-param-gather for full, neither for none and optimizer "
       "(each stage's reduction after its last backward, the all-gather after the step)"},
      {"dp_shard",
       "--num-distributed-optimizer-instances mesh.dp / dp_shard when below mesh.dp: "
       "Megatron-LM's slices of consecutive data-parallel ranks, each sharding one copy (under "
       "Megatron FSDP its hybrid mode, the copies replicated)"},
      {"sequence_parallel", "--sequence-parallel"},
      {"stages[].first_layer",
       "the blocks of each stage: Megatron-LM's even split, "
       "--decoder-first/last-pipeline-num-layers or --pipeline-model-parallel-layout"},
      {"stages[].num_layers", "as stages[].first_layer"},
      {"stages[].replicas", "implied when uniform; per-stage replication cannot be said"},
      {"stages[].recompute",
       "selective: --recompute-activations; full: --recompute-granularity full "
       "--recompute-method uniform --recompute-num-layers 1; a mix cannot be said"},
      {"stages[].predicted_time_ms", "not written (Trident's prediction)"},
      {"stages[].predicted_memory_bytes", "not written (Trident's prediction)"},
      {"predicted.step_time_ms", "a comment"},
      {"predicted.tokens_per_s", "not written (Trident's prediction)"},
      {"predicted.bubble_fraction", "not written (Trident's prediction)"},
      {"predicted.peak_memory_bytes", "a comment"},
      {"provenance.planner_version", "not written (Trident's own)"},
      {"provenance.profile_digest", "not written (Trident's own)"},
      {"provenance.cluster_digest", "not written (Trident's own)"},
  };
  return mapping;
}

std::string_view MegatronShardingStrategy(DpSharding level) {
  switch (level) {
    case DpSharding::kOptimizer:
      return "optim";
    case DpSharding::kGradients:
      return "optim_grads";
    case DpSharding::kFull:
      return "optim_grads_params";
    default:
      return "no_shard";
  }
}

// Every flag below, its type and the rules the export follows (an even split unless
// --decoder-first/last-pipeline-num-layers, each above 0, leave the middle stages an even
// split; --pipeline-model-parallel-layout with --num-layers equal to its 't' count, starting
// with E, ending with L, its stage count pp times the virtual stages, and no other split or
// virtual flag; --num-virtual-stages-per-pipeline-rank for an even split), as
// megatron/training/arguments.py and megatron/core/transformer/transformer_config.py and
// pipeline_parallel_layer_layout.py state them in Megatron-LM's main branch of 2025, read at
// github.com/OpenEuroLLM/NVIDIA-Megatron-LM (a copy of NVIDIA/Megatron-LM) commit 24126a9.
// Sharding: _add_distributed_args there defines --use-distributed-optimizer,
// --num-distributed-optimizer-instances, --use-megatron-fsdp, --data-parallel-sharding-strategy
// (no_shard, optim, optim_grads, optim_grads_params) and --outer-dp-sharding-strategy (no_shard,
// optim); validate_args requires --ckpt-format fsdp_dtensor with --use-megatron-fsdp and refuses
// pipeline parallelism (and the distributed optimizer) only with --use-torch-fsdp2, PyTorch's
// FSDP2, which the import reads as full sharding (gradients with
// --torch-fsdp2-no-reshard-after-forward, "FSDP ZeRO-2"); megatron/core/parallel_state.py makes
// each distributed-optimizer instance a consecutive slice of the dp-cp group's ranks.
// Overlap: _add_distributed_args defines --overlap-grad-reduce and --overlap-param-gather
// (store_true), --no-align-grad-reduce (dest align_grad_reduce, default on: "all PP stages will
// launch gradient reduces simultaneously") and --no-overlap-p2p-communication (dest
// overlap_p2p_comm, default on); validate_args turns overlap_p2p_comm off without virtual
// stages, asks pp above 2 for interleaving without it, allows --overlap-param-gather only with
// --use-distributed-optimizer or --use-megatron-fsdp and with --overlap-grad-reduce, and
// --tp-comm-overlap only with --sequence-parallel (which tp 1 turns off). The 1F1B schedule
// (megatron/core/pipeline_parallel/schedules.py, cooldown) enables the bucketed reduction in the
// last backward only on the first stage when the reduces are aligned; without
// --overlap-grad-reduce finalize_model_grads reduces each stage's gradients after its schedule.
std::string_view MegatronVersion() {
  return "Megatron-LM main of 2025, as copied at OpenEuroLLM/NVIDIA-Megatron-LM 24126a9";
}

const std::vector<MegatronFlag>& MegatronFlags() {
  static const std::vector<MegatronFlag> flags = {
      {"--num-layers", MegatronFlagKind::kInt},
      {"--hidden-size", MegatronFlagKind::kInt},
      {"--num-attention-heads", MegatronFlagKind::kInt},
      {"--group-query-attention", MegatronFlagKind::kSwitch},
      {"--num-query-groups", MegatronFlagKind::kInt},
      {"--ffn-hidden-size", MegatronFlagKind::kInt},
      {"--seq-length", MegatronFlagKind::kInt},
      {"--max-position-embeddings", MegatronFlagKind::kInt},
      {"--normalization", MegatronFlagKind::kText},
      {"--norm-epsilon", MegatronFlagKind::kNumber},
      {"--position-embedding-type", MegatronFlagKind::kText},
      {"--rotary-base", MegatronFlagKind::kInt},
      {"--swiglu", MegatronFlagKind::kSwitch},
      {"--disable-bias-linear", MegatronFlagKind::kSwitch},
      {"--untie-embeddings-and-output-weights", MegatronFlagKind::kSwitch},
      {"--attention-backend", MegatronFlagKind::kText},
      {"--use-flash-attn", MegatronFlagKind::kSwitch},
      {"--hidden-dropout", MegatronFlagKind::kNumber},
      {"--attention-dropout", MegatronFlagKind::kNumber},
      {"--tensor-model-parallel-size", MegatronFlagKind::kInt},
      {"--pipeline-model-parallel-size", MegatronFlagKind::kInt},
      {"--context-parallel-size", MegatronFlagKind::kInt},
      {"--cp-comm-type", MegatronFlagKind::kText},
      {"--num-virtual-stages-per-pipeline-rank", MegatronFlagKind::kInt},
      {"--num-layers-per-virtual-pipeline-stage", MegatronFlagKind::kInt},
      {"--decoder-first-pipeline-num-layers", MegatronFlagKind::kInt},
      {"--decoder-last-pipeline-num-layers", MegatronFlagKind::kInt},
      {"--pipeline-model-parallel-layout", MegatronFlagKind::kText},
      {"--micro-batch-size", MegatronFlagKind::kInt},
      {"--global-batch-size", MegatronFlagKind::kInt},
      {"--recompute-activations", MegatronFlagKind::kSwitch},
      {"--recompute-granularity", MegatronFlagKind::kText},
      {"--recompute-method", MegatronFlagKind::kText},
      {"--recompute-num-layers", MegatronFlagKind::kInt},
      {"--use-distributed-optimizer", MegatronFlagKind::kSwitch},
      {"--num-distributed-optimizer-instances", MegatronFlagKind::kInt},
      {"--use-megatron-fsdp", MegatronFlagKind::kSwitch},
      {"--data-parallel-sharding-strategy", MegatronFlagKind::kText},
      {"--outer-dp-sharding-strategy", MegatronFlagKind::kText},
      {"--ckpt-format", MegatronFlagKind::kText},
      {"--use-torch-fsdp2", MegatronFlagKind::kSwitch},
      {"--torch-fsdp2-no-reshard-after-forward", MegatronFlagKind::kSwitch},
      {"--overlap-grad-reduce", MegatronFlagKind::kSwitch},
      {"--no-align-grad-reduce", MegatronFlagKind::kSwitch},
      {"--overlap-param-gather", MegatronFlagKind::kSwitch},
      {"--tp-comm-overlap", MegatronFlagKind::kSwitch},
      {"--no-overlap-p2p-communication", MegatronFlagKind::kSwitch},
      {"--sequence-parallel", MegatronFlagKind::kSwitch},
      {"--bf16", MegatronFlagKind::kSwitch},
      {"--fp16", MegatronFlagKind::kSwitch},
  };
  return flags;
}

}  // namespace trident
