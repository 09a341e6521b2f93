// Readable and machine-readable reports of plans: the summary `trident plan` prints, the
// runners-up with the reason each lost, and `trident explain`'s breakdown.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "planner/evaluate.h"
#include "planner/search.h"

namespace trident {

// Figures a report needs from outside the planner.
struct ReportContext {
  double model_flops_per_step = 0;   // training FLOPs of one step, whole model (0: unknown)
  double peak_flops_per_device = 0;  // dense peak of the plan's dtype (0: unknown)
};

// Mesh, stage table, step time, throughput, achieved FLOP/s and % of peak, bubble, memory
// and headroom.
std::string PlanSummary(const Plan& plan, const Evaluation& evaluation,
                        const ReportContext& context);

// One line per runner-up: its configuration, step time and why it lost to `best`
// ("+12.3% step: bubble 41.0 ms vs 12.2 ms").
std::string RunnersUp(const std::vector<Candidate>& ranked);
std::string WhyLost(const Evaluation& best, const Evaluation& other);

// The bottleneck stage and the split of the step into compute, bubble, exposed
// communication and optimizer.
std::string StepBreakdown(const Plan& plan, const Evaluation& evaluation);

// "tp 8 × pp 16 × dp 8, 1f1b, micro-batch 1 × 192, recompute selective".
std::string ConfigLine(const Plan& plan);

}  // namespace trident
