#include "launcher/megatron_export.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "core/text_format.h"
#include "launcher/mpirun_command.h"
#include "launcher/placement.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// The shortest text that reads back as `value` (1e-05, 10000, 0.1).
std::string Number(double value) {
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

// What one stage holds, in Megatron's terms.
struct StageContent {
  int blocks = 0;  // transformer layers
  bool embedding = false;
  bool final_norm = false;
  bool head = false;
};

std::vector<StageContent> StageContents(const Plan& plan) {
  const std::vector<LayerKind> kinds = plan.model.ExpandLayers();
  std::vector<StageContent> out;
  for (const PlanStage& stage : plan.stages) {
    StageContent c;
    for (int i = stage.first_layer; i < stage.first_layer + stage.num_layers; ++i) {
      c.blocks += kinds[i] == LayerKind::kGptBlock || kinds[i] == LayerKind::kLlamaBlock;
      c.embedding = c.embedding || kinds[i] == LayerKind::kEmbedding;
      c.final_norm = c.final_norm || kinds[i] == LayerKind::kFinalNorm;
      c.head = c.head || kinds[i] == LayerKind::kLmHead;
    }
    out.push_back(c);
  }
  return out;
}

class Args {
 public:
  explicit Args(std::vector<std::string>* out) : out_(out) {}
  Args& Flag(const std::string& flag) {
    out_->push_back(flag);
    return *this;
  }
  Args& Add(const std::string& flag, const std::string& value) {
    out_->push_back(flag);
    out_->push_back(value);
    return *this;
  }

 private:
  std::vector<std::string>* out_;
};

void Inexpressible(MegatronExport* out, std::string path, std::string why, std::string fix) {
  out->inexpressible.push_back({std::move(path), std::move(why), std::move(fix)});
}

// The block kind of a model Megatron's GPT model can build (embedding, blocks of one kind,
// final norm, LM head), or why not.
FieldCheck CheckModelShape(const ModelSpec& model) {
  const std::vector<LayerKind> kinds = model.ExpandLayers();
  const size_t n = kinds.size();
  bool ok = n >= 3 && kinds[0] == LayerKind::kEmbedding && kinds[n - 2] == LayerKind::kFinalNorm &&
            kinds[n - 1] == LayerKind::kLmHead;
  for (size_t i = 1; ok && i + 2 < n; ++i) {
    ok = kinds[i] == kinds[1] &&
         (kinds[i] == LayerKind::kGptBlock || kinds[i] == LayerKind::kLlamaBlock);
  }
  if (ok) return std::nullopt;
  return FieldError{"model.layers[].kind",
                    "Megatron-LM's GPT model is an embedding, transformer blocks of one kind "
                    "(gpt_block or llama_block), a final norm and the output layer; " +
                        model.name + " is not",
                    "export a model of that shape"};
}

void ModelArgs(const Plan& plan, MegatronExport* out) {
  const ModelSpec& m = plan.model;
  if (FieldCheck shape = CheckModelShape(m)) {
    out->inexpressible.push_back(*shape);
    return;
  }
  const bool llama = m.LayerAt(1) == LayerKind::kLlamaBlock;
  Args a(&out->model_args);
  a.Add("--num-layers", Str(m.NumLayers() - 3))
      .Add("--hidden-size", Str(m.hidden))
      .Add("--num-attention-heads", Str(m.heads));
  if (m.kv_heads != m.heads)
    a.Flag("--group-query-attention").Add("--num-query-groups", Str(m.kv_heads));
  a.Add("--ffn-hidden-size", Str(m.ffn_hidden))
      .Add("--seq-length", Str(plan.seq_len))
      .Add("--max-position-embeddings", Str(m.max_seq_len))
      .Add("--normalization", m.norm == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm")
      .Add("--norm-epsilon", Number(m.norm_eps));
  if (m.positions == PositionKind::kRope) {
    a.Add("--position-embedding-type", "rope");
    if (m.rope_theta == static_cast<double>(static_cast<int64_t>(m.rope_theta))) {
      a.Add("--rotary-base", Str(static_cast<int64_t>(m.rope_theta)));
    } else {
      Inexpressible(out, "model.rope_theta",
                    "Megatron-LM's --rotary-base is a whole number, not " + Number(m.rope_theta),
                    "a model with a whole rope_theta");
    }
  } else {
    a.Add("--position-embedding-type", "learned_absolute");
  }
  if (llama) a.Flag("--swiglu").Flag("--disable-bias-linear");
  if (!m.tied_embeddings) a.Flag("--untie-embeddings-and-output-weights");
  a.Add("--attention-backend", m.attention == AttentionKind::kFlash ? "flash" : "unfused");
  a.Add("--hidden-dropout", Number(m.dropout)).Add("--attention-dropout", Number(m.dropout));
}

// Megatron-LM runs 1F1B, or interleaved 1F1B with virtual stages; without a pipeline every
// synchronous schedule is the same computation.
void ScheduleArgs(const Plan& plan, MegatronExport* out) {
  const ScheduleKind s = plan.schedule;
  const bool synchronous = s != ScheduleKind::kPipeDream && s != ScheduleKind::kNaive;
  if (s == ScheduleKind::k1F1B || s == ScheduleKind::kInterleaved1F1B ||
      (plan.mesh.pp == 1 && synchronous)) {
    return;  // the virtual stages are said with the split
  }
  Inexpressible(out, "schedule",
                "Megatron-LM runs 1F1B and interleaved 1F1B, not " + NameOf(ScheduleKindNames(), s),
                "plan with --schedule 1f1b,interleaved_1f1b");
}

// The blocks of each stage, when Megatron's split needs saying, and the virtual stages: an even
// split takes --num-virtual-stages-per-pipeline-rank, a layout says them by its stage count.
void SplitArgs(const Plan& plan, MegatronExport* out) {
  const std::vector<StageContent> stages = StageContents(plan);
  if (!stages.back().final_norm) {
    Inexpressible(out, "stages[].first_layer",
                  "Megatron-LM keeps the final norm on the last stage, with the output layer",
                  "cut the stages elsewhere (--cuts)");
    return;
  }
  const size_t n = stages.size();
  auto blocks = [&](size_t i) { return stages[i].blocks; };
  bool even = true;
  for (size_t i = 1; i < n; ++i) even = even && blocks(i) == blocks(0);
  if (even) {
    if (plan.virtual_stages > 1) {
      Args(&out->parallel_args)
          .Add("--num-virtual-stages-per-pipeline-rank", Str(plan.virtual_stages));
    }
    return;
  }
  bool middle_even = true;
  for (size_t i = 2; i + 1 < n; ++i) middle_even = middle_even && blocks(i) == blocks(1);
  Args a(&out->parallel_args);
  // Megatron's first and last stage counts are above 0 and leave the middle an even split.
  const bool ends = blocks(0) > 0 && blocks(n - 1) > 0 && (n == 2 || blocks(1) > 0);
  if (plan.virtual_stages == 1 && middle_even && ends) {
    a.Add("--decoder-first-pipeline-num-layers", Str(blocks(0)))
        .Add("--decoder-last-pipeline-num-layers", Str(blocks(n - 1)));
    return;
  }
  std::string layout;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) layout += "|";
    if (stages[i].embedding) layout += "E";
    if (blocks(i) == 1) layout += "t";
    if (blocks(i) > 1) layout += "t*" + Str(blocks(i));
    if (stages[i].head) layout += "L";
  }
  a.Add("--pipeline-model-parallel-layout", layout);
}

void RecomputeArgs(const Plan& plan, MegatronExport* out) {
  const RecomputeMode mode = plan.stages.front().recompute;
  if (!UniformRecompute(plan.stages)) {
    Inexpressible(out, "stages[].recompute",
                  "Megatron-LM recomputes every stage alike; the plan's stages differ",
                  "plan with one --recompute mode");
    return;
  }
  Args a(&out->parallel_args);
  if (mode == RecomputeMode::kSelective) a.Flag("--recompute-activations");
  if (mode == RecomputeMode::kFull) {
    a.Add("--recompute-granularity", "full")
        .Add("--recompute-method", "uniform")
        .Add("--recompute-num-layers", "1");
  }
}

// Megatron-LM cuts each sequence into 2·cp chunks and, with sequence parallelism, each cp rank's
// share over tp again in halves: it asks seq_len divisible by 2·cp·tp then (Plan::Check asks
// only tp dividing seq_len / cp).
void ContextArgs(const Plan& plan, MegatronExport* out) {
  const int cp = plan.mesh.cp;
  if (cp == 1) return;
  if (plan.sequence_parallel && plan.seq_len % (2 * cp * plan.mesh.tp) != 0) {
    Inexpressible(out, "mesh.cp",
                  "Megatron-LM needs seq_len " + Str(plan.seq_len) + " divisible by 2·cp·tp = " +
                      Str(2 * cp * plan.mesh.tp) + " with sequence parallelism",
                  "a sequence length 2·cp·tp divides, or plan without --sequence-parallel");
    return;
  }
  Args(&out->parallel_args)
      .Add("--context-parallel-size", Str(cp))
      .Add("--cp-comm-type", "allgather");
}

// The sharding level: the distributed optimizer for optimizer state alone, Megatron FSDP (its
// own, not PyTorch's) for gradients and parameters too. Hybrid sharding is
// --num-distributed-optimizer-instances dp / dp_shard: Megatron-LM cuts each data-parallel
// group's ranks (with their cp ranks) into that many consecutive slices, each sharding one copy,
// as Trident's shard groups of consecutive dp indices do (parallel_state.py); under Megatron FSDP
// the slices are its inner groups and the copies are replicated (--outer-dp-sharding-strategy
// no_shard, the default).
void ShardingArgs(const Plan& plan, MegatronExport* out) {
  Args a(&out->parallel_args);
  const DpSharding level = plan.dp_sharding;
  if (level == DpSharding::kNone) return;
  if (level != DpSharding::kOptimizer) {
    a.Flag("--use-megatron-fsdp")
        .Add("--data-parallel-sharding-strategy", std::string(MegatronShardingStrategy(level)))
        .Add("--ckpt-format", "fsdp_dtensor");
  }
  a.Flag("--use-distributed-optimizer");
  if (plan.dp_shard > 0 && plan.dp_shard < plan.mesh.dp) {
    a.Add("--num-distributed-optimizer-instances", Str(plan.mesh.dp / plan.dp_shard));
  }
}

// The communication overlap Trident's cost model assumes (planner/README.md), and no more:
// each stage's gradient reduction after its last backward and the distributed optimizer's
// parameter all-gather after the step are Megatron-LM without --overlap-grad-reduce and
// --overlap-param-gather; Megatron FSDP's reduce-scatters beside the compute are
// --overlap-grad-reduce, and full sharding's all-gathers prefetched a layer ahead
// --overlap-param-gather. Tensor-parallel collectives are costed on the critical path (no
// --tp-comm-overlap); pipeline transfers as asynchronous, Megatron-LM's default for interleaved
// 1F1B (overlap_p2p_comm).
void OverlapArgs(const Plan& plan, MegatronExport* out) {
  const DpSharding level = plan.dp_sharding;
  Args a(&out->parallel_args);
  if (level == DpSharding::kGradients || level == DpSharding::kFull)
    a.Flag("--overlap-grad-reduce");
  if (level == DpSharding::kFull) a.Flag("--overlap-param-gather");
}

void ParallelArgs(const Plan& plan, MegatronExport* out) {
  if (!UniformReplication(plan.stages)) {
    Inexpressible(out, "stages[].replicas",
                  "Megatron-LM replicates every pipeline stage alike (data parallel size "
                  "world / (tp · pp)); the plan's stages differ",
                  "plan without per-stage replication");
  }
  Args(&out->parallel_args)
      .Add("--tensor-model-parallel-size", Str(plan.mesh.tp))
      .Add("--pipeline-model-parallel-size", Str(plan.mesh.pp))
      .Add("--micro-batch-size", Str(plan.micro_batch_size))
      .Add("--global-batch-size", Str(plan.global_batch));
  ScheduleArgs(plan, out);
  if (CheckModelShape(plan.model) == std::nullopt) SplitArgs(plan, out);
  RecomputeArgs(plan, out);
  ShardingArgs(plan, out);
  OverlapArgs(plan, out);
  Args a(&out->parallel_args);
  if (plan.sequence_parallel) a.Flag("--sequence-parallel");
  ContextArgs(plan, out);
  if (plan.dtype == DType::kBf16) a.Flag("--bf16");
  if (plan.dtype == DType::kFp16) a.Flag("--fp16");
  if (const std::vector<int> nodes = PlanNodeSizes(plan); nodes.back() != nodes.front()) {
    Inexpressible(out, "devices",
                  Str(plan.devices) + " devices do not fill nodes of " +
                      Str(plan.devices_per_node) + ", and torchrun starts as many on each node",
                  "plan for a whole number of nodes");
  }
}

// "ARRAY=(\n  --flag value\n  ...\n)" with one flag and its value a line.
std::string ArrayText(const std::string& name, const std::vector<std::string>& args) {
  std::string text = name + "=(\n";
  for (size_t i = 0; i < args.size(); ++i) {
    const bool value_follows = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0;
    text += "  " + args[i] + (value_follows ? " " + ShellQuoteWord(args[i + 1]) : "") + "\n";
    if (value_follows) ++i;
  }
  return text + ")\n";
}

std::string Comments(const Plan& plan, const std::string& plan_path) {
  std::ostringstream c;
  const PlanPrediction& p = plan.predicted;
  c << "# Megatron-LM launch of " << plan_path << " (trident export --to megatron; flags of "
    << MegatronVersion() << ")\n"
    << "# " << plan.ToString() << "\n"
    << "# Trident predicts " << FormatMs(p.step_time_ms) << " a step, "
    << FormatBytes(static_cast<double>(p.peak_memory_bytes)) << " peak memory per rank.\n"
    << "# Vocabulary: " << plan.model.vocab_size
    << " (the tokenizer's; Megatron-LM pads it to a multiple of 128 x tp).\n"
    << "# Data, tokenizer, optimizer and checkpoint arguments: give them to this script (\"$@\"),\n"
    << "# e.g. --data-path ... --tokenizer-type ... --train-iters ... --lr ...\n";
  const bool fsdp =
      plan.dp_sharding == DpSharding::kGradients || plan.dp_sharding == DpSharding::kFull;
  if (!fsdp && plan.mesh.dp * plan.mesh.cp > 1) {
    const bool zero1 = plan.dp_sharding == DpSharding::kOptimizer;
    c << "# Overlap as Trident predicts: each stage's gradient reduction after its last backward"
      << (zero1 ? ",\n# the parameter all-gather after the step (no --overlap-grad-reduce, "
                  "--overlap-param-gather;\n# adding them"
                : "\n# (no --overlap-grad-reduce; adding it")
      << " hides more communication than Trident credits).\n";
  }
  if (fsdp) {
    c << "# Megatron FSDP: leave CUDA_DEVICE_MAX_CONNECTIONS unset (Megatron-LM refuses 1 with "
         "it).\n";
  }
  return c.str();
}

std::string LaunchLines(const Plan& plan) {
  const std::vector<int> sizes = PlanNodeSizes(plan);  // whole nodes: checked by the export
  const int per_node = sizes.front();
  const int nodes = static_cast<int>(sizes.size());
  std::ostringstream l;
  l << "MEGATRON=${MEGATRON:-.}  # a Megatron-LM checkout\n"
    << "if [[ -n ${SLURM_JOB_ID:-} ]]; then\n"
    << "  # Slurm: one torchrun per node; the first node of the allocation is the rendezvous.\n"
    << "  head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
    << "  exec srun --nodes " << nodes << " --ntasks-per-node 1 torchrun --nnodes " << nodes
    << " --nproc-per-node " << per_node << " \\\n"
    << "    --rdzv-backend c10d --rdzv-endpoint \"$head:29500\" \\\n"
    << "    \"$MEGATRON/pretrain_gpt.py\" \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"$@\"\n"
    << "fi\n"
    << "# torchrun on each of the " << nodes << " node" << (nodes == 1 ? "" : "s")
    << " (NODE_RANK 0.." << nodes - 1 << ", MASTER_ADDR the first node's):\n"
    << "exec torchrun --nnodes " << nodes << " --nproc-per-node " << per_node
    << " --node-rank \"${NODE_RANK:-0}\" \\\n"
    << "  --master-addr \"${MASTER_ADDR:-localhost}\" --master-port \"${MASTER_PORT:-29500}\" \\\n"
    << "  \"$MEGATRON/pretrain_gpt.py\" \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"$@\"\n";
  return l.str();
}

}  // namespace

MegatronExport ExportMegatron(const Plan& plan) {
  MegatronExport out;
  ModelArgs(plan, &out);
  ParallelArgs(plan, &out);
  return out;
}

std::string MegatronScript(const Plan& plan, const MegatronExport& out,
                           const std::string& plan_path) {
  return "#!/usr/bin/env bash\n" + Comments(plan, plan_path) + "set -euo pipefail\n" +
         ArrayText("MODEL_ARGS", out.model_args) + ArrayText("PARALLEL_ARGS", out.parallel_args) +
         LaunchLines(plan);
}

}  // namespace trident
