// A PipeDream graph as a chain of layers, so the chain planner can cut it into stages.
//
// PipeDream's optimizer does not cut single layers: it cuts between *antichain states*. A
// state is a down-set of the DAG (a set of nodes holding every predecessor of each of its
// nodes), named by its antichain of maximal nodes; a stage is the difference of two nested
// states, and the tensors crossing the cut are the outputs of the smaller state that nodes
// outside it consume. Its antichain DAG links each state to the states one node larger.
//
// The chain here is one path through that antichain DAG, from the empty state to the whole
// graph, one node per step: a topological order of the nodes. Among the nodes whose
// predecessors are all placed, the next is the one with the smallest id number (PipeDream
// numbers nodes in the order the forward pass created them, so the order follows the forward
// pass: one branch of a fork runs to its end before the next starts), then the earliest in the
// file. Layer i is node order[i]; cutting after layer i is cutting at the state of the first
// i + 1 nodes, which is always an antichain state, so every cut the chain allows is one
// PipeDream allows.
//
// What a branchy graph loses (a chain, vgg16 or alexnet, loses nothing):
//  - cuts: PipeDream's DP may cut at any antichain state (resnet50 has 240, inception_v3
//    221,564); the chain offers the n + 1 states along one path, so a partition that ends one
//    stage inside two parallel branches at once, or that orders branches differently, is not
//    available;
//  - cut traffic: every tensor crossing a cut counts, skip connections included (a residual
//    block's input crossing a cut inside the block counts with the block's partial output).
//    PipeDream counts only the outputs of the antichain's own nodes, so its cut traffic is at
//    most ours;
//  - overlap: parallel branches in one stage run one after the other (their times add), as in
//    PipeDream.
// PipeDream's own preprocessing is kept: `Input` nodes are the minibatch, not layers (their
// costs and sizes are zeroed, as PipeDream's optimizer zeroes them), and `__getitem__` nodes
// that are sinks are dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/pipedream_graph.h"

namespace trident {

struct ChainLayer {
  int node = 0;              // index into PipeDreamGraph::nodes
  int64_t input_bytes = 0;   // every tensor crossing the cut before this layer
  int64_t output_bytes = 0;  // every tensor crossing the cut after it; the last layer: its own
                             // output (the model's)
  bool operator==(const ChainLayer&) const = default;
};

struct PipeDreamChain {
  std::vector<ChainLayer> layers;
  std::vector<int> dropped;  // Input nodes and __getitem__ sinks, in file order
};

// The chain of `graph` (read from `file`). InvalidArgument naming "file:line" when the graph
// has a cycle (naming a node on it), has no Input node, has an Input node with an incoming edge,
// has a byte figure above core/limits.h's kMaxLayerBytes, or has no node besides those dropped.
StatusOr<PipeDreamChain> LinearizePipeDream(const PipeDreamGraph& graph, const std::string& file);

}  // namespace trident
