// The search's checks of the user's fixed layout (--cuts, --replicas), before any
// configuration is tried (planner/search.h). Internal to the planner.
#pragma once

#include <vector>

#include "core/status.h"
#include "planner/search.h"

namespace trident::search_internal {

// --cuts: the first layer of each stage, starting at 0, strictly increasing, in range.
Status CheckCuts(const std::vector<int>& cuts, int num_layers);

// --replicas: a count of at least 1 per stage, as many as --fix pp and the stages of --cuts,
// summing to devices / (tp · cp) for some tp · cp.
Status CheckReplicas(const SearchConstraints& c, int devices);

}  // namespace trident::search_internal
