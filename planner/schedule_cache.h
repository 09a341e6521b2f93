// ScheduleCache: generated schedules and their simulated lanes kept across simulations, for a
// caller that simulates many plans of few shapes (the search: the partitions of one
// configuration differ in their cuts and times, not in their action lists).
//
//   ScheduleCache cache;
//   EvaluateOptions options;
//   options.schedules = &cache;   // each EvaluatePlan then generates and lowers a shape once
//
// A schedule is keyed by (kind, pp, virtual stages, micro-batches); prepared lanes by the
// schedule's shape, the replicas and the steps: all that PrepareLanes reads of a generated
// schedule (REQUIRES: the schedules whose lanes are asked for are GenerateSchedule's, or
// StepSchedule's frames of replicated plans; their validation is then done once). Each table keeps
// the last kCapacity entries; a value handed out stays valid while its holder keeps it.
// Thread-safety: none.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/replica_lanes.h"
#include "core/schedule.h"
#include "core/status.h"

namespace trident {

struct SimulationInput;
struct PreparedLanes;

class ScheduleCache {
 public:
  static constexpr size_t kCapacity = 8;

  // GenerateSchedule(kind, pp, v, m), made once.
  StatusOr<std::shared_ptr<const Schedule>> Generated(ScheduleKind kind, int pp, int v, int m);
  // PrepareLanes(in, steps) (planner/lane_replay.h): the lanes and their replay order, made
  // once.
  StatusOr<std::shared_ptr<const PreparedLanes>> Lanes(const SimulationInput& in, int steps);

 private:
  template <typename Key, typename Value>
  struct Table {
    std::map<Key, std::shared_ptr<const Value>> entries;
    std::deque<Key> order;  // oldest first
    void Put(const Key& key, std::shared_ptr<const Value> value);
  };
  using ShapeKey = std::tuple<ScheduleKind, int, int, int>;
  using LanesKey = std::tuple<ShapeKey, bool, std::vector<int>, int>;

  Table<ShapeKey, Schedule> schedules_;
  Table<LanesKey, PreparedLanes> lanes_;
};

}  // namespace trident
