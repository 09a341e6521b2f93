// Placement: which host runs which ranks of a plan.
//
// The planner priced a plan for nodes of `devices_per_node` devices with node k holding ranks
// [k·devices_per_node, (k+1)·devices_per_node) — the rank map (core/rank_map.h) puts tp
// fastest so that a tp group sits inside one such node. Placement keeps those "plan nodes"
// whole: hosts are filled in the order given, each taking as many whole plan nodes, in rank
// order, as its slots hold. So every host runs one contiguous range of ranks, a tp group
// never spans hosts (tp divides devices_per_node and groups start at multiples of tp), and
// every link the planner counted as intra-node stays inside one host.
//
// Worked example: 16 ranks, devices_per_node 8, hosts a:8, b:16 → a runs ranks 0-7, b runs
// 8-15 (8 of its 16 slots). Hosts a:4, b:4, c:4, d:4 are refused: ranks 0-7 must share a
// host, and the message says so with the fixes (hosts with 8 slots, or a plan for 4-device
// nodes).
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "core/rank_map.h"
#include "core/status.h"
#include "launcher/hostfile.h"

namespace trident {

struct HostRanks {
  std::string host;
  int slots = 0;       // what the host offers
  int first_rank = 0;  // its ranks are [first_rank, first_rank + num_ranks)
  int num_ranks = 0;   // 0: the host is not needed
  bool operator==(const HostRanks&) const = default;
};

struct Placement {
  // On this machine without a host list (mpirun's default): one entry "localhost".
  bool local = false;
  std::vector<HostRanks> hosts;  // in the order given

  int NumRanks() const;
  // Index into `hosts` of each rank, in rank order.
  std::vector<int> HostOfRank() const;
  bool operator==(const Placement&) const = default;
};

// Sizes of the plan's nodes in rank order: devices_per_node each, the last one possibly
// smaller (e.g. 10 devices in nodes of 4: {4, 4, 2}). REQUIRES: plan.Check() passed.
std::vector<int> PlanNodeSizes(const Plan& plan);

// Places `plan` (read from `plan_path`, named in messages) on `hosts` as described above.
// Fails, naming the mismatch and a fix, when the hosts offer fewer slots than the plan has
// ranks or a host cannot hold a whole plan node. With `exact` (--np-check) it also fails
// unless the hosts offer exactly the plan's ranks, so that every slot is used.
StatusOr<Placement> PlaceRanks(const Plan& plan, const std::string& plan_path,
                               const std::vector<HostSlots>& hosts, bool exact);

// `ranks` ranks on this machine, as `mpirun -np N` without --host places them.
Placement PlaceLocally(int ranks);

// Checks what placement promises, independently of how it was built: ranks 0..N-1 each on
// one host, contiguous per host, within each host's slots, and every tp group of `map` on
// one host. Returns the first violation.
Status CheckPlacement(const RankMap& map, const Placement& placement);

// A table: host, slots, ranks, the pipeline positions and the tp groups it runs.
std::string PlacementTable(const Plan& plan, const Placement& placement);

}  // namespace trident
