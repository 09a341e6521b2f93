// `trident explain`'s list of the time model's assumptions that move a plan's step most: the
// GEMM efficiency at the plan's block shapes, the memory-bound and link efficiencies, and how
// much of the gradient sync the other positions' work hides (planner/README.md, The time model of a
// GPU cluster).
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/plan.h"
#include "core/profile.h"
#include "planner/evaluate.h"

namespace trident {

// Lines such as "GEMMs: 0.80 of 989 TFLOP/s at the block's largest (412 GFLOP), 0.60 at its
// smallest (8.6 GFLOP)". With a measured or imported profile the layer times are the
// profile's, and only the communication lines apply.
std::string AssumptionsText(const Plan& plan, const Evaluation& evaluation,
                            const ClusterSpec& cluster, ProfileSource source);

}  // namespace trident
