// `trident export PLAN --to torchtitan`: a plan as torchtitan's job TOML ([model] flavor,
// [training] batches, sequence and precision, [parallelism] degrees, pipeline schedule, split
// points and micro-batch size, [activation_checkpoint]), or, for each choice of the plan
// torchtitan cannot express, the field and why.
//
// Keys are those of torchtitan's torchtitan/config/job_config.py at the commit
// TorchtitanVersion() cites; a test checks every key the export writes against
// TorchtitanKeys(). torchtitan builds models from registered flavors (TorchtitanFlavors()), so a
// plan exports only when its model is one of them.
//
// Facts of that version the mapping follows (torchtitan/train.py, torchtitan/distributed/,
// torchtitan/models/llama3/):
// - data parallelism without sharding is DDP, which torchtitan refuses beside any other
//   parallelism ("DDP has not supported > 1D parallelism"); a data_parallel_shard_degree above 1
//   is FSDP, which shards parameters, gradients and optimizer state (a full-sharding plan), and
//   with a data_parallel_replicate_degree above 1 beside it HSDP (hybrid sharding: the mesh puts
//   dp_replicate outside dp_shard, so a shard group is consecutive replicas); nothing shards
//   the optimizer state or gradients alone;
// - mixed precision (mixed_precision_param) applies through FSDP, or through autocast under DDP
//   or on one device: with tensor or pipeline parallelism and no FSDP a job trains in fp32;
// - local_batch_size is each data-parallel rank's batch, split into micro-batches of
//   pipeline_parallel_microbatch_size under a pipeline; global_batch_size / (local_batch_size ·
//   dp) steps of gradient accumulation make the global batch;
// - split points "layers.K" start a stage at block K; the embedding stays on the first stage,
//   the final norm and output layer on the last; stage s runs on pipeline rank s mod pp;
// - tensor parallelism always shards norms along the sequence (sequence parallelism), which
//   Trident does not model: its memory prediction for such a plan errs high.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_error.h"
#include "core/plan.h"

namespace trident {

struct TorchtitanExport {
  std::string toml;  // the job file, with the plan and its predictions as comments
  std::vector<FieldError> inexpressible;
};

// REQUIRES: plan.Check() passed. `plan_path` names the plan in the comments.
TorchtitanExport ExportTorchtitan(const Plan& plan, const std::string& plan_path);

// Every field of core/plan_fields.h, by path: how the export writes it, or why it does not.
const std::map<std::string_view, std::string_view>& TorchtitanFieldMapping();

// The job-file keys ("section.key") of a plan: the export writes them, the import reads them
// (all but job.description, a summary) and lists any other key of a file as ignored; and the
// version they are facts of.
const std::vector<std::string_view>& TorchtitanKeys();
std::string_view TorchtitanVersion();

// A model torchtitan registers (models/llama3/__init__.py of that version): its name and
// flavor, and the Trident model it builds (a Llama 3: llama_blocks, RMSNorm 1e-5, RoPE, untied,
// vocabulary 128256).
struct TorchtitanFlavor {
  std::string_view name;    // [model] name
  std::string_view flavor;  // [model] flavor
  ModelSpec model;          // max_seq_len 131072: torchtitan sets it to the sequence length
};
const std::vector<TorchtitanFlavor>& TorchtitanFlavors();

// torchtitan's pipeline_parallel_schedule name of a Trident schedule ("" when it has none;
// torch.distributed.pipelining reads the names case-insensitively, and so does the import).
std::string_view TorchtitanScheduleName(ScheduleKind schedule);

}  // namespace trident
