#include "launcher/torchtitan_export.h"

#include <sstream>

#include <toml++/toml.h>

#include "core/text_format.h"
#include "launcher/placement.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

void Inexpressible(TorchtitanExport* out, std::string path, std::string why, std::string fix) {
  out->inexpressible.push_back({std::move(path), std::move(why), std::move(fix)});
}

// The registered flavor whose model is the plan's (max_seq_len aside: torchtitan sets it to
// the sequence length), or nullptr.
const TorchtitanFlavor* FindFlavor(const ModelSpec& model) {
  for (const TorchtitanFlavor& f : TorchtitanFlavors()) {
    ModelSpec m = model;
    m.name = f.model.name;
    m.max_seq_len = f.model.max_seq_len;
    m.dtype = f.model.dtype;
    m.attention = f.model.attention;
    if (m == f.model) return &f;
  }
  return nullptr;
}

toml::table ModelTable(const Plan& plan, TorchtitanExport* out) {
  const TorchtitanFlavor* flavor = FindFlavor(plan.model);
  if (flavor == nullptr) {
    std::string names;
    for (const TorchtitanFlavor& f : TorchtitanFlavors())
      names += (names.empty() ? "" : ", ") + std::string(f.name) + " " + std::string(f.flavor);
    Inexpressible(out, "model.name",
                  "torchtitan trains registered model flavors (" + names + "); " +
                      plan.model.ToString() + " is none of them",
                  "export a plan of one of them, or register a flavor with these dimensions in "
                  "torchtitan/models/llama3/__init__.py");
    return toml::table{{"name", "llama3"}, {"flavor", plan.model.name}};
  }
  if (plan.model.attention != flavor->model.attention) {
    Inexpressible(out, "model.attention",
                  "torchtitan computes attention with PyTorch's scaled_dot_product_attention "
                  "(flash, no scores kept), not unfused as planned",
                  "set attention: flash in the model and plan again");
  }
  return toml::table{{"name", std::string(flavor->name)}, {"flavor", std::string(flavor->flavor)}};
}

// Whether torchtitan applies FSDP: with data_parallel_shard_degree above 1 (a full-sharding plan)
// or over the context-parallel ranks.
bool AppliesFsdp(const Plan& plan) {
  return plan.dp_sharding == DpSharding::kFull || plan.mesh.cp > 1;
}

// The mesh: FSDP (full sharding, hybrid too), DDP alone, or tensor and pipeline parallelism
// with FSDP or without data parallelism (torchtitan refuses DDP beside them).
void CheckMesh(const Plan& plan, TorchtitanExport* out) {
  if (plan.dp_sharding == DpSharding::kOptimizer || plan.dp_sharding == DpSharding::kGradients) {
    Inexpressible(out, "dp_sharding",
                  "torchtitan shards with FSDP (parameters, gradients and optimizer state: full) "
                  "or not at all, never " +
                      NameOf(DpShardingNames(), plan.dp_sharding) + " alone",
                  "plan with dp_sharding full or none");
  }
  if (!UniformReplication(plan.stages)) {
    Inexpressible(out, "stages[].replicas",
                  "torchtitan replicates every pipeline stage alike; the plan's stages differ",
                  "plan without per-stage replication");
  } else if (plan.mesh.dp > 1 && (plan.mesh.tp > 1 || plan.mesh.pp > 1) &&
             plan.dp_sharding == DpSharding::kNone) {
    Inexpressible(out, "mesh.dp",
                  "torchtitan's data parallelism beside tensor or pipeline parallelism is FSDP "
                  "(dp_sharding full); DDP, which keeps the replicas whole, is refused beside them",
                  "plan with dp_sharding full, or with --fix dp=1, or with --fix tp=1 --fix pp=1");
  }
  if (plan.mesh.tp > 1 && !plan.sequence_parallel) {
    Inexpressible(out, "sequence_parallel",
                  "torchtitan's tensor parallelism always runs the norms sequence-parallel "
                  "(SequenceParallel in its parallelize.py); this plan keeps them whole",
                  "plan with --sequence-parallel on");
  }
  if (plan.dtype == DType::kFp16) {
    Inexpressible(out, "dtype", "torchtitan trains in bfloat16 or float32, not fp16",
                  "plan with --dtype bf16");
  } else if (plan.dtype == DType::kBf16 && (plan.mesh.tp > 1 || plan.mesh.pp > 1) &&
             !AppliesFsdp(plan)) {
    Inexpressible(out, "dtype",
                  "torchtitan applies bf16 mixed precision through FSDP, or through autocast "
                  "without tensor or pipeline parallelism; this plan would train in fp32",
                  "plan with --dtype fp32, dp_sharding full, or --fix tp=1 --fix pp=1");
  }
}

void CheckSchedule(const Plan& plan, TorchtitanExport* out) {
  const ScheduleKind s = plan.schedule;
  const bool synchronous = s != ScheduleKind::kPipeDream && s != ScheduleKind::kNaive;
  if (plan.mesh.pp == 1 && synchronous) return;
  if (TorchtitanScheduleName(s).empty()) {
    Inexpressible(out, "schedule",
                  "torchtitan's pipeline schedules Trident plans are GPipe, 1F1B and "
                  "Interleaved1F1B, not " +
                      NameOf(ScheduleKindNames(), s),
                  "plan with --schedule gpipe,1f1b,interleaved_1f1b");
  }
}

// "layers.K" for each stage after the first: torchtitan starts a stage at a block.
toml::array SplitPoints(const Plan& plan, TorchtitanExport* out) {
  toml::array splits;
  const int blocks = plan.model.NumLayers() - 3;
  for (size_t s = 1; s < plan.stages.size(); ++s) {
    const int first = plan.stages[s].first_layer;
    if (first > blocks) {
      Inexpressible(out, "stages[].first_layer",
                    "torchtitan keeps the final norm and the output layer on the last stage, "
                    "after its last block",
                    "cut the stages elsewhere (--cuts)");
      break;
    }
    splits.push_back("layers." + Str(first - 1));
  }
  return splits;
}

toml::table Parallelism(const Plan& plan, TorchtitanExport* out) {
  CheckMesh(plan, out);
  // Full sharding is FSDP over shard groups of dp_shard replicas, HSDP's replicate degree the
  // groups (torchtitan's mesh puts dp_replicate outside dp_shard: groups of consecutive
  // replicas); under a pipeline "always" reshards after each micro-batch's forward, as
  // Trident costs it (torchtitan's default keeps the parameters gathered there).
  const bool full = plan.dp_sharding == DpSharding::kFull;
  const int shard = !full ? 1 : plan.dp_shard > 0 ? plan.dp_shard : plan.mesh.dp;
  toml::table p{{"data_parallel_replicate_degree", plan.mesh.dp / shard},
                {"data_parallel_shard_degree", shard},
                {"tensor_parallel_degree", plan.mesh.tp},
                {"pipeline_parallel_degree", plan.mesh.pp},
                {"context_parallel_degree", plan.mesh.cp}};
  if (full && plan.mesh.pp > 1) p.insert("fsdp_reshard_after_forward", "always");
  if (plan.mesh.pp == 1) return p;
  CheckSchedule(plan, out);
  p.insert("pipeline_parallel_schedule", std::string(TorchtitanScheduleName(plan.schedule)));
  p.insert("pipeline_parallel_split_points", SplitPoints(plan, out));
  p.insert("pipeline_parallel_microbatch_size", plan.micro_batch_size);
  return p;
}

// Each data-parallel rank's batch: its micro-batches under a pipeline, else one micro-batch
// per step of gradient accumulation.
toml::table Training(const Plan& plan) {
  const int64_t local = plan.mesh.pp > 1
                            ? int64_t{plan.micro_batch_size} * plan.num_micro_batches / plan.mesh.dp
                            : plan.micro_batch_size;
  return toml::table{
      {"local_batch_size", local},
      {"global_batch_size", plan.global_batch},
      {"seq_len", plan.seq_len},
      {"mixed_precision_param", plan.dtype == DType::kBf16 ? "bfloat16" : "float32"}};
}

toml::table ActivationCheckpoint(const Plan& plan, TorchtitanExport* out) {
  const RecomputeMode mode = plan.stages.front().recompute;
  if (!UniformRecompute(plan.stages)) {
    Inexpressible(out, "stages[].recompute",
                  "torchtitan checkpoints every stage alike; the plan's stages differ",
                  "plan with one --recompute mode");
  } else if (mode == RecomputeMode::kSelective) {
    Inexpressible(out, "stages[].recompute",
                  "torchtitan's selective checkpointing (per op, or every n-th block) is not "
                  "the attention-core recompute Trident plans",
                  "plan with --recompute none,full");
  }
  return toml::table{{"mode", mode == RecomputeMode::kFull ? "full" : "none"}};
}

std::string Comments(const Plan& plan, const std::string& plan_path) {
  const std::vector<int> sizes = PlanNodeSizes(plan);
  std::ostringstream c;
  c << "# torchtitan job of " << plan_path << " (trident export --to torchtitan; keys of "
    << TorchtitanVersion() << ")\n"
    << "# " << plan.ToString() << "\n"
    << "# Trident predicts " << FormatMs(plan.predicted.step_time_ms) << " a step, "
    << FormatBytes(static_cast<double>(plan.predicted.peak_memory_bytes))
    << " peak memory per rank.\n"
    << "# Launch on each node: torchrun --nnodes " << sizes.size() << " --nproc-per-node "
    << sizes.front() << " -m torchtitan.train --job.config_file THIS_FILE\n"
    << "# Dataset, tokenizer, optimizer and steps: torchtitan's defaults, or add them here.\n";
  return c.str();
}

}  // namespace

TorchtitanExport ExportTorchtitan(const Plan& plan, const std::string& plan_path) {
  TorchtitanExport out;
  toml::table job{{"job", toml::table{{"description", plan.ToString()}}},
                  {"model", ModelTable(plan, &out)},
                  {"training", Training(plan)},
                  {"parallelism", Parallelism(plan, &out)},
                  {"activation_checkpoint", ActivationCheckpoint(plan, &out)}};
  if (const std::vector<int> nodes = PlanNodeSizes(plan); nodes.back() != nodes.front()) {
    Inexpressible(&out, "devices",
                  Str(plan.devices) + " devices do not fill nodes of " +
                      Str(plan.devices_per_node) + ", and torchrun starts as many on each node",
                  "plan for a whole number of nodes");
  }
  std::ostringstream text;
  text << Comments(plan, plan_path) << job << "\n";
  out.toml = text.str();
  return out;
}

}  // namespace trident
