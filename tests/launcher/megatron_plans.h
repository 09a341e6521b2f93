// Plans for the Megatron-LM export and import tests: GPT and Llama models of any depth, cut
// into stages of given transformer-block counts.
#pragma once

#include <vector>

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

}  // namespace trident::testing
