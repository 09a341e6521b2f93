// PipeDream's layer profile (profiler/*/profiles/<model>/graph.txt of msr-fiddle/pipedream):
// a DAG of the modules of one training step, each with its measured costs.
//
// File form, one record per line (tests/data/pipedream/README.md has the full description):
//   node12 -- Conv2d(64, 64, ...) -- forward_compute_time=3.852, backward_compute_time=9.775,
//       activation_size=205520896.0, parameter_size=147456.0        (one line in the file)
//   <TAB>node11 -- node12                                            (node12 consumes node11)
// Times are milliseconds per minibatch (PipeDream's batch size, one GPU, fp32); sizes are
// bytes for the whole minibatch. A multi-output module lists its activation sizes as
// "[a; b; c]", which counts as their sum (as PipeDream reads it). An optional 4th field
// `stage_id=K` (in PipeDream's partitioned output graphs) is accepted and ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trident {

struct PipeDreamNode {
  std::string id;           // "node12"
  std::string description;  // the module, e.g. "Conv2d(...)", "Input", "__getitem__(0)"
  double fwd_ms = 0;
  double bwd_ms = 0;
  double activation_bytes = 0;  // the node's output(s)
  double param_bytes = 0;
  int line = 0;  // 1-based line of the node in its file

  // An `Input`, `Input0`, ... node: the minibatch itself, not a layer.
  bool IsInput() const;
  // The number at the end of `id` (PipeDream numbers nodes in the order the forward pass
  // created them), or -1 when `id` ends in no digit.
  long long IdNumber() const;
};

struct PipeDreamEdge {
  int from = 0;  // index into PipeDreamGraph::nodes
  int to = 0;    // consumes `from`'s output
  int line = 0;
};

struct PipeDreamGraph {
  std::vector<PipeDreamNode> nodes;  // in file order
  std::vector<PipeDreamEdge> edges;  // in file order
};

// The graph of `text`, read from `file`. InvalidArgument naming "file:line" for a malformed
// line, a negative or non-finite figure, a duplicate node id, or an edge to an unknown node;
// and for a file with no node. Cycles and inputs are checked by LinearizePipeDream.
StatusOr<PipeDreamGraph> ParsePipeDreamGraph(std::string_view text, const std::string& file);

}  // namespace trident
