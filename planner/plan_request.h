// The fields a plan shares with the search request that produced it: the model, the cluster's
// name, the devices, the global batch, the sequence length and the dtype. The search writes
// them into every plan it returns, and `trident explain` reads them back to re-plan a plan's
// neighbours; both go through these two functions, which list the fields once.
#pragma once

#include "core/plan.h"
#include "planner/search.h"

namespace trident {

// A request for `plan`'s job with every choice the search makes left open and the
// request's defaults for the rest (runners-up, re-ranking).
SearchRequest RequestForJob(const Plan& plan);

// Writes `request`'s job into `plan`, leaving the plan's choices as they are.
void CopyJobToPlan(const SearchRequest& request, Plan* plan);

}  // namespace trident
