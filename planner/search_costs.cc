#include "planner/search_costs.h"

namespace trident::search_internal {

std::string Describe(const Config& c) {
  std::string text = "tp " + std::to_string(c.tp) + (c.sp ? " + sp" : "") +
                     (c.cp > 1 ? ", cp " + std::to_string(c.cp) : "") + ", pp " +
                     std::to_string(c.pp) + ", dp " + std::to_string(c.dp) + ", micro-batch " +
                     std::to_string(c.micro_batch) + ", " + NameOf(ScheduleKindNames(), c.schedule);
  if (c.v > 1) text += " v " + std::to_string(c.v);
  text += ", recompute " + NameOf(RecomputeModeNames(), c.recompute);
  if (c.sharding == DpSharding::kNone) return text;
  text += ", dp_sharding " + NameOf(DpShardingNames(), c.sharding);
  return c.shard > 0 ? text + " in groups of " + std::to_string(c.shard) : text;
}

}  // namespace trident::search_internal
