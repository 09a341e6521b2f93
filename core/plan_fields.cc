#include "core/plan_fields.h"

namespace trident {
namespace {

constexpr FieldRole kExecuted = FieldRole::kExecuted;
constexpr FieldRole kRestricted = FieldRole::kRestricted;
constexpr FieldRole kInformational = FieldRole::kInformational;

}  // namespace

const std::vector<PlanFieldUse>& PlanFieldUses() {
  static const std::vector<PlanFieldUse> uses = {
      {"format_version", kInformational, "the loader's; every version it reads runs alike"},
      {"kind", kInformational, "the loader's: the file is a plan"},
      {"model.name", kExecuted, "checkpoints record it; --load refuses another model's"},
      {"model.vocab_size", kExecuted, "embedding and lm_head rows; the data's tokens stay below"},
      {"model.max_seq_len", kExecuted, "learned position rows; the longest sequence"},
      {"model.hidden", kExecuted, "every layer's width"},
      {"model.heads", kExecuted, "attention heads, split over tp"},
      {"model.kv_heads", kExecuted, "grouped-query key and value heads, split over tp"},
      {"model.ffn_hidden", kExecuted, "the MLP's inner width, split over tp"},
      {"model.norm", kExecuted, "LayerNorm or RMSNorm"},
      {"model.positions", kExecuted, "learned positions or RoPE"},
      {"model.attention", kRestricted, "unfused only: the layers keep the softmax output"},
      {"model.tied_embeddings", kExecuted, "one table for embedding and lm_head"},
      {"model.dropout", kRestricted, "0 only: the layers have no dropout"},
      {"model.norm_eps", kExecuted, "the norms' epsilon"},
      {"model.rope_theta", kExecuted, "RoPE's base"},
      {"model.dtype", kInformational, "the preset's dtype; the plan's dtype is what trains"},
      {"model.layers[].kind", kRestricted,
       "the layers built; generic layers have no implementation, and a trained model starts "
       "with an embedding and ends with an lm_head"},
      {"model.layers[].repeat", kExecuted, "how many layers of the kind"},
      {"cluster", kInformational, "the cluster the plan was made for"},
      {"devices", kExecuted, "the job's ranks (mpirun -np)"},
      {"devices_per_node", kExecuted, "trident launch puts a whole node's ranks on one host"},
      {"mesh.dp", kExecuted, "replicas of the largest position"},
      {"mesh.pp", kExecuted, "pipeline positions"},
      {"mesh.tp", kExecuted, "tensor-parallel ranks of every stage"},
      {"mesh.cp", kExecuted,
       "context-parallel ranks of every replica: each holds 2 of a sequence's 2·cp chunks"},
      {"virtual_stages", kExecuted, "interleaved 1F1B's stages per position"},
      {"micro_batch_size", kExecuted, "sequences per micro-batch"},
      {"num_micro_batches", kExecuted, "micro-batches per step, round robin over replicas"},
      {"global_batch", kExecuted, "sequences per step: the loss is their mean"},
      {"seq_len", kExecuted, "tokens per sequence"},
      {"dtype", kRestricted,
       "fp32, or bf16 as Megatron's bf16 mode (bf16 values and activations, fp32 gradients and "
       "master weights); fp16 refused (no loss scaling)"},
      {"schedule", kExecuted, "each rank's list of forward and backward actions"},
      {"dp_sharding", kRestricted,
       "each rank of a shard group keeps and steps its chunk of the optimizer state, with "
       "gradients also of the summed gradients, with full also of the parameters; none only "
       "under pipedream"},
      {"dp_shard", kExecuted,
       "the replicas of a shard group; the groups sum the shards' "
       "gradients across"},
      {"sequence_parallel", kExecuted,
       "the residual stream, norms and loss input split over the tp group along the sequence"},
      {"stages[].first_layer", kExecuted, "the stage's first layer"},
      {"stages[].num_layers", kExecuted, "the stage's layers"},
      {"stages[].replicas", kRestricted,
       "ranks of the stage, micro-batches round robin; a layout that would deadlock is refused"},
      {"stages[].recompute", kExecuted, "what the stage's layers stash for backward"},
      {"stages[].predicted_time_ms", kInformational, "set beside the measured times"},
      {"stages[].predicted_memory_bytes", kInformational, "set beside the measured peak"},
      {"predicted.step_time_ms", kInformational, "summary.json sets it beside the measured step"},
      {"predicted.tokens_per_s", kInformational, "summary.json sets it beside the measured"},
      {"predicted.bubble_fraction", kInformational, "the planner's estimate"},
      {"predicted.peak_memory_bytes", kInformational, "summary.json sets it beside the measured"},
      {"provenance.planner_version", kInformational, "which planner wrote the plan"},
      {"provenance.profile_digest", kInformational, "the profile the plan was made from"},
      {"provenance.cluster_digest", kInformational, "the cluster file the plan was made from"},
  };
  return uses;
}

}  // namespace trident
