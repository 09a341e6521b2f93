#include "launcher/placement.h"

#include <algorithm>
#include <cstdint>

#include "core/check.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// "1 slot", "8 slots".
std::string Count(int64_t n, const std::string& noun) {
  return Str(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string RankRange(int first, int count) {
  return count == 1 ? Str(first) : Str(first) + "-" + Str(first + count - 1);
}

// "(dp, pp, tp)" of a rank, "(dp, pp, cp, tp)" when the map has cp > 1.
std::string CoordsText(const RankMap& map, int rank) {
  const MeshCoords c = map.Coords(rank);
  return "(" + Str(c.dp) + ", " + Str(c.pp) + ", " + (map.Cp() > 1 ? Str(c.cp) + ", " : "") +
         Str(c.tp) + ")";
}

std::string PlanShape(const Plan& plan) {
  size_t nodes = PlanNodeSizes(plan).size();
  return Count(plan.devices, "rank") + " in " + Count(static_cast<int64_t>(nodes), "node") +
         " of " + Count(plan.devices_per_node, "device");
}

int64_t TotalSlots(const std::vector<HostSlots>& hosts) {
  int64_t total = 0;
  for (const HostSlots& host : hosts) total += host.slots;
  return total;
}

Status TooFewSlots(const Plan& plan, const std::string& plan_path,
                   const std::vector<HostSlots>& hosts) {
  int64_t total = TotalSlots(hosts);
  return Infeasible(plan_path + ": the plan runs " + PlanShape(plan) + " but the hosts offer " +
                    Count(total, "slot") + " (" + HostsToString(hosts) +
                    "); add hosts or slots, or re-plan for " + Count(total, "device") +
                    " (trident plan --devices " + Str(total) + ")");
}

Status NodeTooBig(const Plan& plan, const std::string& plan_path, const HostSlots& host,
                  int first_rank, int node_ranks) {
  return Infeasible(plan_path + ": the plan was made for nodes of " + Str(plan.devices_per_node) +
                    " devices (devices_per_node: " + Str(plan.devices_per_node) + "), so ranks " +
                    RankRange(first_rank, node_ranks) + " must share a host, but host '" +
                    host.name + "' has " + Count(host.slots, "slot") +
                    "; give each host at least " + Count(node_ranks, "slot") +
                    ", or re-plan for nodes of " + Count(host.slots, "device") +
                    " (a cluster file with devices_per_node: " + Str(host.slots) + ")");
}

Status NodesLeftOver(const Plan& plan, const std::string& plan_path,
                     const std::vector<HostSlots>& hosts, size_t placed_nodes) {
  return Infeasible(plan_path + ": the hosts (" + HostsToString(hosts) + ") hold only " +
                    Str(static_cast<int64_t>(placed_nodes)) + " whole nodes of the plan's " +
                    PlanShape(plan) + " (a node's ranks never split across hosts); add hosts, " +
                    "or give slots in multiples of " + Str(plan.devices_per_node));
}

}  // namespace

int Placement::NumRanks() const {
  int total = 0;
  for (const HostRanks& host : hosts) total += host.num_ranks;
  return total;
}

std::vector<int> Placement::HostOfRank() const {
  std::vector<int> host_of_rank(NumRanks(), -1);
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int r = 0; r < hosts[h].num_ranks; ++r) {
      int rank = hosts[h].first_rank + r;
      if (rank >= 0 && rank < static_cast<int>(host_of_rank.size())) {
        host_of_rank[rank] = static_cast<int>(h);
      }
    }
  }
  return host_of_rank;
}

std::vector<int> PlanNodeSizes(const Plan& plan) {
  TRIDENT_CHECK(plan.devices_per_node >= 1 && plan.devices >= 1);
  std::vector<int> sizes;
  for (int first = 0; first < plan.devices; first += plan.devices_per_node) {
    sizes.push_back(std::min(plan.devices_per_node, plan.devices - first));
  }
  return sizes;
}

StatusOr<Placement> PlaceRanks(const Plan& plan, const std::string& plan_path,
                               const std::vector<HostSlots>& hosts, bool exact) {
  if (TotalSlots(hosts) < plan.devices) return TooFewSlots(plan, plan_path, hosts);
  if (exact && TotalSlots(hosts) != plan.devices) {
    return Infeasible("--np-check: " + plan_path + " runs " + Str(plan.devices) +
                      " ranks but the hosts offer " + Count(TotalSlots(hosts), "slot") + " (" +
                      HostsToString(hosts) + "); list exactly the plan's ranks");
  }
  std::vector<int> nodes = PlanNodeSizes(plan);
  Placement placement;
  size_t node = 0;
  int next_rank = 0;
  for (const HostSlots& host : hosts) {
    HostRanks ranks{host.name, host.slots, next_rank, 0};
    while (node < nodes.size() && ranks.num_ranks + nodes[node] <= host.slots) {
      ranks.num_ranks += nodes[node];
      next_rank += nodes[node];
      ++node;
    }
    if (ranks.num_ranks == 0 && node < nodes.size()) {
      return NodeTooBig(plan, plan_path, host, next_rank, nodes[node]);
    }
    placement.hosts.push_back(ranks);
  }
  if (node < nodes.size()) return NodesLeftOver(plan, plan_path, hosts, node);
  // With as many slots as ranks and every rank placed, every slot is used (--np-check).
  return placement;
}

Placement PlaceLocally(int ranks) {
  Placement placement;
  placement.local = true;
  placement.hosts.push_back(HostRanks{"localhost", ranks, 0, ranks});
  return placement;
}

Status CheckPlacement(const RankMap& map, const Placement& placement) {
  int expected_first = 0;
  for (const HostRanks& host : placement.hosts) {
    if (host.num_ranks == 0) continue;
    if (host.first_rank != expected_first) {
      return Internal("host '" + host.host + "' starts at rank " + Str(host.first_rank) +
                      ", expected " + Str(expected_first) + " (ranks out of order)");
    }
    if (!placement.local && host.num_ranks > host.slots) {
      return Internal("host '" + host.host + "' runs " + Str(host.num_ranks) + " ranks on " +
                      Str(host.slots) + " slots");
    }
    expected_first += host.num_ranks;
  }
  if (expected_first != map.NumRanks()) {
    return Internal("the hosts run " + Str(expected_first) + " ranks, the rank map has " +
                    Str(map.NumRanks()));
  }
  std::vector<int> host_of_rank = placement.HostOfRank();
  for (int rank = 0; rank < map.NumRanks(); ++rank) {
    for (int peer : map.TpGroup(rank)) {
      if (host_of_rank[peer] != host_of_rank[rank]) {
        return Internal("the tp group of rank " + Str(rank) + " spans hosts '" +
                        placement.hosts[host_of_rank[rank]].host + "' and '" +
                        placement.hosts[host_of_rank[peer]].host + "'");
      }
    }
  }
  return Status::Ok();
}

std::string PlacementTable(const Plan& plan, const Placement& placement) {
  RankMap map = plan.MakeRankMap();
  size_t width = 4;
  for (const HostRanks& host : placement.hosts) width = std::max(width, host.host.size());
  auto pad = [](std::string text, size_t n) {
    return text + std::string(n > text.size() ? n - text.size() : 0, ' ');
  };
  std::string table = "  " + pad("host", width) + "  slots  ranks      " +
                      (map.Cp() > 1 ? "(dp, pp, cp, tp)" : "(dp, pp, tp)") + " first .. last\n";
  for (const HostRanks& host : placement.hosts) {
    std::string slots = placement.local ? "-" : Str(host.slots);
    table += "  " + pad(host.host, width) + "  " + pad(slots, 5) + "  ";
    if (host.num_ranks == 0) {
      table += "-          (not needed)\n";
      continue;
    }
    int last = host.first_rank + host.num_ranks - 1;
    table += pad(RankRange(host.first_rank, host.num_ranks), 9) + "  " +
             CoordsText(map, host.first_rank) + " .. " + CoordsText(map, last) + "\n";
  }
  return table;
}

}  // namespace trident
