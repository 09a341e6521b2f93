#include "models/pipedream_chain.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <queue>
#include <utility>

#include "core/limits.h"

namespace trident {
namespace {

std::string At(const std::string& file, int line) { return file + ":" + std::to_string(line); }

struct Adjacency {
  std::vector<std::vector<int>> out;
  std::vector<std::vector<int>> in;
};

Adjacency MakeAdjacency(const PipeDreamGraph& graph) {
  Adjacency adj{std::vector<std::vector<int>>(graph.nodes.size()),
                std::vector<std::vector<int>>(graph.nodes.size())};
  for (const PipeDreamEdge& edge : graph.edges) {
    adj.out[edge.from].push_back(edge.to);
    adj.in[edge.to].push_back(edge.from);
  }
  return adj;
}

// Names a node on a cycle among the unplaced nodes: every unplaced node has an unplaced
// predecessor, so walking predecessors from any of them must revisit a node.
Status CycleError(const PipeDreamGraph& graph, const Adjacency& adj,
                  const std::vector<bool>& placed, const std::string& file) {
  int node = 0;
  while (placed[node]) ++node;
  std::vector<bool> seen(graph.nodes.size(), false);
  while (!seen[node]) {
    seen[node] = true;
    for (int from : adj.in[node]) {
      if (!placed[from]) {
        node = from;
        break;
      }
    }
  }
  const PipeDreamNode& on_cycle = graph.nodes[node];
  return InvalidArgument(At(file, on_cycle.line) + ": node " + on_cycle.id +
                         " lies on a cycle; a PipeDream graph must be a DAG (check its edge "
                         "lines)");
}

// Kahn's algorithm, taking the ready node with the smallest (id number, file position); ids
// without a number come after numbered ones.
StatusOr<std::vector<int>> TopologicalOrder(const PipeDreamGraph& graph, const Adjacency& adj,
                                            const std::string& file) {
  using Key = std::pair<long long, int>;
  auto key = [&graph](int node) {
    long long number = graph.nodes[node].IdNumber();
    return Key{number < 0 ? LLONG_MAX : number, node};
  };
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  std::vector<size_t> waiting(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    waiting[i] = adj.in[i].size();
    if (waiting[i] == 0) ready.push(key(static_cast<int>(i)));
  }
  std::vector<int> order;
  std::vector<bool> placed(graph.nodes.size(), false);
  while (!ready.empty()) {
    int node = ready.top().second;
    ready.pop();
    order.push_back(node);
    placed[node] = true;
    for (int next : adj.out[node]) {
      if (--waiting[next] == 0) ready.push(key(next));
    }
  }
  if (order.size() < graph.nodes.size()) return CycleError(graph, adj, placed, file);
  return order;
}

Status CheckInputs(const PipeDreamGraph& graph, const std::string& file) {
  bool any = false;
  for (const PipeDreamNode& node : graph.nodes) any = any || node.IsInput();
  if (!any) {
    return InvalidArgument(file +
                           ": no Input node (a node whose description starts with 'Input'); "
                           "PipeDream graphs start at the minibatch's Input node");
  }
  for (const PipeDreamEdge& edge : graph.edges) {
    if (graph.nodes[edge.to].IsInput()) {
      return InvalidArgument(At(file, edge.line) + ": edge into Input node " +
                             graph.nodes[edge.to].id +
                             "; an Input is the minibatch and has no "
                             "producer");
    }
  }
  return Status::Ok();
}

// Inputs, and __getitem__ nodes that feed nothing (what PipeDream's optimizer removes).
std::vector<bool> DroppedNodes(const PipeDreamGraph& graph, const Adjacency& adj) {
  std::vector<bool> dropped(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const PipeDreamNode& node = graph.nodes[i];
    dropped[i] =
        node.IsInput() || (adj.out[i].empty() && node.description.rfind("__getitem__", 0) == 0);
  }
  return dropped;
}

StatusOr<int64_t> Bytes(double value, const PipeDreamNode& node, const std::string& file) {
  if (value > static_cast<double>(limits::kMaxLayerBytes)) {
    return InvalidArgument(At(file, node.line) + ": node " + node.id + " gives more than " +
                           std::to_string(limits::kMaxLayerBytes) + " bytes, Trident's limit " +
                           "for one layer (core/README.md, Limits)");
  }
  return std::llround(value);
}

// cut[i]: bytes of every tensor made at or before position i and consumed after it.
// Node u adds its output to the cuts pos(u) .. last(u) - 1, last(u) its last consumer.
StatusOr<std::vector<int64_t>> CutBytes(const PipeDreamGraph& graph, const Adjacency& adj,
                                        const std::vector<int>& kept, const std::string& file) {
  std::vector<int> position(graph.nodes.size(), -1);
  for (size_t i = 0; i < kept.size(); ++i) position[kept[i]] = static_cast<int>(i);
  std::vector<int64_t> delta(kept.size() + 1, 0);
  for (size_t i = 0; i < kept.size(); ++i) {
    int last = static_cast<int>(i);
    for (int next : adj.out[kept[i]]) last = std::max(last, position[next]);
    if (last == static_cast<int>(i)) continue;
    const PipeDreamNode& node = graph.nodes[kept[i]];
    TRIDENT_ASSIGN_OR_RETURN(int64_t bytes, Bytes(node.activation_bytes, node, file));
    delta[i] += bytes;
    delta[last] -= bytes;
  }
  std::vector<int64_t> cut(kept.size(), 0);
  int64_t running = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    running += delta[i];
    if (running > limits::kMaxLayerBytes) {
      const PipeDreamNode& node = graph.nodes[kept[i]];
      return InvalidArgument(At(file, node.line) + ": the tensors crossing the cut after node " +
                             node.id + " exceed " + std::to_string(limits::kMaxLayerBytes) +
                             " bytes, Trident's limit for one layer");
    }
    cut[i] = running;
  }
  return cut;
}

}  // namespace

StatusOr<PipeDreamChain> LinearizePipeDream(const PipeDreamGraph& graph, const std::string& file) {
  const Adjacency adj = MakeAdjacency(graph);
  TRIDENT_RETURN_IF_ERROR(CheckInputs(graph, file));
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(graph, adj, file));
  const std::vector<bool> dropped = DroppedNodes(graph, adj);
  PipeDreamChain chain;
  std::vector<int> kept;
  for (int node : order) {
    if (!dropped[node]) kept.push_back(node);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (dropped[i]) chain.dropped.push_back(static_cast<int>(i));
  }
  if (kept.empty()) {
    return InvalidArgument(file +
                           ": every node is an Input or an unused __getitem__; no layer "
                           "is left to plan");
  }
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int64_t> cut, CutBytes(graph, adj, kept, file));
  for (size_t i = 0; i < kept.size(); ++i) {
    const PipeDreamNode& node = graph.nodes[kept[i]];
    ChainLayer layer{kept[i], i == 0 ? 0 : cut[i - 1], cut[i]};
    if (i + 1 == kept.size()) {
      TRIDENT_ASSIGN_OR_RETURN(layer.output_bytes, Bytes(node.activation_bytes, node, file));
    }
    chain.layers.push_back(layer);
  }
  return chain;
}

}  // namespace trident
