// `trident plan --baseline PLAN`: a configuration the user already runs (often one read with
// `trident import megatron`), evaluated with the same costs as the search, set beside the plan
// the search chose: both step times and peak memories, the difference, and the choices that
// differ ("tp 4 instead of 8, zb_h1 instead of 1f1b, dp_sharding full instead of none"). And the
// other direction, a plan re-planned within a framework's choices for `trident export
// --allow-approximate`.
#pragma once

#include <string>

#include "core/plan.h"
#include "planner/evaluate.h"
#include "planner/search.h"

namespace trident {

enum class Framework { kMegatron, kDeepSpeed, kTorchtitan };

// The searches that re-plan `plan`'s job (its model, devices, global batch, sequence and dtype)
// within a framework's choices, for `trident export --allow-approximate`; the fastest of their
// plans is the re-plan. Every stage is replicated and recomputed alike, and only torchtitan
// shards in hybrid groups.
// Megatron-LM: 1F1B or interleaved 1F1B; dp_sharding none or optimizer (the distributed
// optimizer). DeepSpeed: 1F1B, recompute none or full, no sequence or context parallelism, and
// either no tensor parallelism (a pipeline: ZeRO stage 0 or 1) or no pipeline (ZeRO stage 0 to
// 3: every level); two searches. torchtitan: GPipe, 1F1B or interleaved 1F1B, recompute none or
// full, sequence parallelism wherever tp > 1; data parallelism alone unsharded, or FSDP
// (dp_sharding full, HSDP in any shard groups) with any tp and pp, or, in fp32 only, tensor and
// pipeline parallelism without data parallelism (torchtitan trains bf16 with tensor or pipeline
// parallelism only under FSDP).
std::vector<SearchRequest> ReplanRequests(const Plan& plan, Framework framework);

// `model` as `framework` computes it: torchtitan's attention is flash (PyTorch's
// scaled_dot_product_attention); Megatron-LM and DeepSpeed run either kind.
ModelSpec FrameworkModel(const ModelSpec& model, Framework framework);

// InvalidArgument naming `baseline_path` unless the baseline trains the request's model (name
// and layers), on its devices, global batch, sequence length and dtype.
Status CheckBaselineMatches(const Plan& baseline, const std::string& baseline_path,
                            const SearchRequest& request);

// The choices of `best` that differ from `baseline`'s, e.g. "tp 4 instead of 8, micro-batch 2
// instead of 1, zb_h1 instead of 1f1b, other stage cuts"; "" when none do.
std::string ChangedChoices(const Plan& baseline, const Plan& best);

// "your configuration (PATH): 21.42 s a step, 71.00 GiB peak per rank\n
//  Trident's plan:            18.60 s a step, 69.00 GiB peak per rank: 13.2% faster, with tp 4
//  instead of 8, ..." — or that the baseline does not fit in the device's memory.
std::string BaselineComparison(const Plan& baseline, const Evaluation& baseline_ev,
                               const std::string& baseline_path, const Plan& best,
                               const Evaluation& best_ev);

}  // namespace trident
