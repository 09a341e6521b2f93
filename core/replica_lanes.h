// Lanes of a replicated pipeline: what every replica of every pipeline position runs in a
// step, with global micro-batch ids. The runtime (runtime/train/job_layout.h) gives each rank
// its lane's list; the planner's simulator replays all lanes; the memory model counts the
// micro-batches a lane keeps alive. One rule for all three:
//
// Round robin. A step has M micro-batches numbered 0..M-1. Position p has r = replicas[p]
// replicas (1 <= r <= M). Micro-batch j runs on replica j mod r, so replica d takes
// m_d = ceil((M - d) / r) of them: with M = 4 and r = 3, replica 0 takes {0, 3}, replica 1 {1}
// and replica 2 {2}. Replica d runs position p's list of the schedule generated for m_d
// micro-batches; its local micro-batch i is global micro-batch i·r + d.
//
// Several steps: step k's micro-batch j is k·M + j; a lane's list is its position's
// UnrollSteps list over its m_d micro-batches a step, mapped the same way.
//
// Warm-up (1f1b, zb_h1). A lane runs w forwards before its first backward: pp − p − 1, as in
// position p's own list, unless position p has more replicas than the positions before it can feed.
// With replicas {1, 3, 1} and M = 4, position 1's replica 0 would run 1F0 1F3 before 1B0 while
// position 0 runs 0F3 only after 0B0: a deadlock. The rule, position by position from 0, with D = ∞
// and c = ceil(M / r) (the busiest lane's count): w is the largest value <= min(pp − p − 1, c − 1)
// with r·w < D; then D = min(D, r·(w + 1)) unless w = c − 1. A lane with warm-up w runs the list of
// position pp − 1 − w, on its own stage; with {1, 3, 1}, position 1 takes w = 0 and its replica 0
// runs 1F0 1B0 1F3 1B3. Uniform replication and the worked example below keep pp − p − 1. Why no
// lane waits forever: a lane runs F g before B h exactly when (g − h) / r <= w, so the keys g + p·ε
// of each F g and h + p·ε + D_p of each B h, with D_p above r·w, below r·(w + 1) unless w = c − 1,
// and strictly decreasing over positions (the rule leaves such a choice), order every lane and put
// every action after its prerequisites (a W waits only for its own lane's B): running the actions
// by key finishes. PipeDream keeps pp − p − 1 (its replicas divide M and wait for each other after
// every backward).
//
// Worked example: M = 4, replicas {3, 1}, 1F1B, pp 2. Position 0 replica 0 runs local
// "0F0 0F1 0B0 0B1" = global 0F0 0F3 0B0 0B3; replica 1 runs 0F1 0B1; replica 2 runs 0F2 0B2;
// position 1 runs 1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule.h"

namespace trident {

struct Lane {
  int position = 0;
  int replica = 0;
  int micro_batches = 0;        // m_d: of one step
  std::vector<Action> actions;  // global stage and micro-batch ids, in run order
};

// m_d = ceil((M - d) / r): the micro-batches replica d of r takes out of M.
inline int LaneMicroBatches(int num_micro_batches, int replicas, int replica) {
  return (num_micro_batches - replica + replicas - 1) / replicas;
}

// The warm-up rule above, one position at a time: Next gives position p's w (at most its busiest
// lane's count less one) from the positions before it, which it has seen in order from 0. A
// search that builds a pipeline position by position copies the rule at each step.
class WarmUpRule {
 public:
  int Next(int pp, int position, int num_micro_batches, int replicas);
  // What the later positions' warm-ups depend on: rules with equal states give them alike.
  int64_t State() const { return bound_; }

 private:
  int64_t bound_ = int64_t{1} << 62;  // no position before position 0
};

// The lanes, position by position, replicas in order (the order of core/rank_map.h).
// InvalidArgument when replicas.size() != pp, a replication is below 1 or above
// num_micro_batches, steps < 1, or the schedule cannot be generated for a lane's count (the
// generator's message, naming the position and its count).
StatusOr<std::vector<Lane>> ReplicaLanes(ScheduleKind kind, int pp, int virtual_stages,
                                         int num_micro_batches, const std::vector<int>& replicas,
                                         int steps);

// The lanes of positions [first, last] only, as ReplicaLanes gives them, for a replay of part
// of a pipeline. REQUIRES 0 <= first <= last < pp.
StatusOr<std::vector<Lane>> ReplicaLanesBetween(ScheduleKind kind, int pp, int virtual_stages,
                                                int num_micro_batches,
                                                const std::vector<int>& replicas, int steps,
                                                int first, int last);

}  // namespace trident
