#include "planner/schedule_cache.h"

#include "planner/lane_replay.h"
#include "planner/simulator.h"

namespace trident {

template <typename Key, typename Value>
void ScheduleCache::Table<Key, Value>::Put(const Key& key, std::shared_ptr<const Value> value) {
  entries[key] = std::move(value);
  order.push_back(key);
  if (order.size() <= kCapacity) return;
  entries.erase(order.front());
  order.pop_front();
}

StatusOr<std::shared_ptr<const Schedule>> ScheduleCache::Generated(ScheduleKind kind, int pp, int v,
                                                                   int m) {
  const ShapeKey key(kind, pp, v, m);
  auto it = schedules_.entries.find(key);
  if (it != schedules_.entries.end()) return it->second;
  TRIDENT_ASSIGN_OR_RETURN(Schedule made, GenerateSchedule(kind, pp, v, m));
  auto value = std::make_shared<const Schedule>(std::move(made));
  schedules_.Put(key, value);
  return value;
}

StatusOr<std::shared_ptr<const PreparedLanes>> ScheduleCache::Lanes(const SimulationInput& in,
                                                                    int steps) {
  const Schedule& s = *in.schedule;
  const LanesKey key(ShapeKey(s.kind, s.pp, s.virtual_stages, s.num_micro_batches),
                     s.split_backward, in.replicas, steps);
  auto it = lanes_.entries.find(key);
  if (it != lanes_.entries.end()) return it->second;
  TRIDENT_ASSIGN_OR_RETURN(PreparedLanes made, PrepareLanes(in, steps));
  auto value = std::make_shared<const PreparedLanes>(std::move(made));
  lanes_.Put(key, value);
  return value;
}

}  // namespace trident
