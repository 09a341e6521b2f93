// Plans for the export and import tests (Megatron-LM, torchtitan, DeepSpeed): GPT and Llama
// models of any depth, cut into stages of given transformer-block counts; and what those tests
// share.
#pragma once

#include <string>
#include <vector>

#include "core/field_error.h"
#include "core/plan.h"

namespace trident::testing {

// The gpt3-1.3b preset (tied, learned positions, dropout 0.1) with `blocks` gpt_blocks.
ModelSpec Gpt(int blocks);
// The llama3-8b preset (GQA 32/8, RoPE 500000, RMSNorm, untied) with `blocks` llama_blocks.
ModelSpec Llama(int blocks);

// A bf16 plan of `model` whose stages hold `blocks` transformer blocks each (the first also the
// embedding, the last the final norm and head), over pp = blocks.size() / v positions of tp
// ranks each replicated `dp` times on nodes of 8, with 4 micro-batches a replica and position.
// Expects (gtest) that it passes Plan::Check.
Plan MakePlan(const ModelSpec& model, int tp, int dp, std::vector<int> blocks, int v = 1,
              ScheduleKind schedule = ScheduleKind::k1F1B);

// `plan` with each replica a cp group of its tp groups: cp times the devices.
Plan WithContextParallel(Plan plan, int cp);

// `plan` sharded at `level` over shard groups of `dp_shard` replicas (0: all of them).
// Expects (gtest) that it passes Plan::Check.
Plan Sharded(Plan plan, DpSharding level, int dp_shard = 0);

// The key paths of an export's inexpressible choices, in order.
std::vector<std::string> KeyPaths(const std::vector<FieldError>& errors);

// `plan` as an import gives it back: no predictions or provenance, the model in the plan's
// dtype, and a job smaller than a node on a node of its size (launchers start as many ranks on
// every node).
Plan AsImported(Plan plan);

// Each stage's layer count, and each stage's first layer, in stage order: what an import's
// stage cuts are checked by.
std::vector<int> StageLayerCounts(const Plan& plan);
std::vector<int> StageFirstLayers(const Plan& plan);

// Expects (gtest) `text` to equal the file at `path`; with TRIDENT_UPDATE_GOLDEN set, writes it
// first (when a format changes on purpose: then read the diff).
void ExpectGolden(const std::string& path, const std::string& text);

}  // namespace trident::testing
