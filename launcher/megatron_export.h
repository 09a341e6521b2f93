// `trident export PLAN --to megatron`: the Megatron-LM command that trains a plan — the model's
// arguments, the parallel ones, and the launch lines (torchrun on every node, or srun running
// torchrun) — or, for each choice of the plan Megatron-LM cannot express, the field and why.
//
// Flags are those of Megatron-LM's megatron/training/arguments.py at the commit MegatronFlags()
// cites; a test checks every flag the export writes against that list. The mapping of every
// plan field (core/plan_fields.h) is MegatronFieldMapping(), also checked by a test, so a new
// plan field fails until its mapping (or the reason there is none) is written.
//
// Layers: Trident counts the embedding, each transformer block, the final norm and the LM
// head as layers; Megatron's --num-layers counts the blocks, and puts the embedding on the
// first pipeline stage and the final norm and output layer on the last. Stage cuts that differ
// from Megatron's even split are written with --decoder-first-pipeline-num-layers and
// --decoder-last-pipeline-num-layers when only the end stages differ, and with
// --pipeline-model-parallel-layout otherwise.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_error.h"
#include "core/plan.h"

namespace trident {

struct MegatronExport {
  std::vector<std::string> model_args;     // "--num-layers", "24", ...
  std::vector<std::string> parallel_args;  // sizes, batches, schedule, recompute, precision
  // The plan's choices Megatron-LM cannot express: key path, why, and what would do instead.
  std::vector<FieldError> inexpressible;
};

// REQUIRES: plan.Check() passed.
MegatronExport ExportMegatron(const Plan& plan);

// The launch script of an export without inexpressible choices: the plan summarized and its
// predictions as comments, MODEL_ARGS and PARALLEL_ARGS arrays, and the torchrun and Slurm
// (srun running torchrun on every node) forms; data, tokenizer and optimizer arguments come
// from the script's own arguments ("$@"). `plan_path` names the plan in the comments.
std::string MegatronScript(const Plan& plan, const MegatronExport& out,
                           const std::string& plan_path);

// Every field of core/plan_fields.h, by path: how the export writes it, or why it does not.
const std::map<std::string_view, std::string_view>& MegatronFieldMapping();

// The Megatron-LM flags of a plan, each with the kind of its value: those the export writes and
// the import reads (megatron_import.h); and the Megatron-LM version they are facts of.
enum class MegatronFlagKind { kSwitch, kInt, kNumber, kText };
struct MegatronFlag {
  std::string_view name;
  MegatronFlagKind kind;
};
const std::vector<MegatronFlag>& MegatronFlags();
std::string_view MegatronVersion();

// Megatron FSDP's --data-parallel-sharding-strategy of a sharding level: no_shard, optim,
// optim_grads or optim_grads_params.
std::string_view MegatronShardingStrategy(DpSharding level);

}  // namespace trident
