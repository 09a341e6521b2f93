// The planner's --fix flag (trident plan, trident run): key=value items fixing search degrees.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "planner/search.h"

namespace trident {

// Sets c's tp, pp, dp, cp, micro_batch or dp_shard from items "tp=8"; InvalidArgument naming the
// item for an unknown key or a value that is not a positive integer.
Status ParseFix(const std::vector<std::string>& fix, SearchConstraints* c);

}  // namespace trident
