// A plan evaluated on its cluster: what simulate, explain and fidelity start from.
#pragma once

#include <memory>
#include <string>

#include "cli/cost_inputs.h"
#include "core/plan.h"
#include "planner/evaluate.h"

namespace trident {

struct EvaluatedPlan {
  Plan plan;
  std::unique_ptr<CostInputs> inputs;
  Evaluation evaluation;
};

// Loads the plan and its cost inputs; without --cluster, configs/clusters/<the plan's
// cluster>.yaml is used when it exists. `max_memory_gib` 0: the device's memory.
StatusOr<EvaluatedPlan> LoadAndEvaluate(const std::string& plan_path, CostOptions options,
                                        double max_memory_gib);

// The same for a plan already read; `source` names where it came from in messages (a file,
// or a file and a run); `transfers`: how the software that runs it moves activations between
// stages (planner/evaluate.h).
StatusOr<EvaluatedPlan> Evaluate(Plan plan, const std::string& source, CostOptions options,
                                 double max_memory_gib,
                                 PipelineTransfers transfers = PipelineTransfers::kAsync);

}  // namespace trident
