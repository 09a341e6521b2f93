// A PartitionCosts read from a table of per-layer values, for tests of the partition DP.
//
//   StageMs    = (sum of compute_ms over the stage) / replicas
//                + ring all-reduce of the stage's param_bytes over its replicas,
//                or +inf when sum memory_bytes + sum activation_bytes * (P - stage_index)
//                exceeds the memory limit (1F1B: stage s keeps P - s micro-batches in flight).
//   BoundaryMs = activation_bytes of the last layer left of the cut / bandwidth, where the
//                bandwidth is inter-node when the right stage starts on a node boundary
//                (boundary_unit % units_per_node == 0), intra-node otherwise.
//
// Ring all-reduce of B bytes over n replicas: 2 (n - 1) / n * B / bw; e.g. 4 replicas,
// 1e9 bytes, 100 GB/s: 2 * 3/4 * 1e9 / 100e9 s = 15 ms. It uses the inter-node bandwidth when
// the replicas [first_unit, first_unit + n) span more than one node. With units_per_node >=
// the number of units the network has one level.
#pragma once

#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "planner/partition.h"

namespace trident {

struct LayerCosts {
  double compute_ms = 0;        // forward + backward of one micro-batch on one unit
  double param_bytes = 0;       // gradients all-reduced over the stage's replicas
  double activation_bytes = 0;  // output: sent across a cut, stashed per micro-batch in flight
  double memory_bytes = 0;      // weights, gradients, optimizer state
};

struct NetworkCosts {
  int units_per_node = std::numeric_limits<int>::max();  // one level by default
  double intra_gbps = 100;
  double inter_gbps = 10;
};

class TablePartitionCosts : public PartitionCosts {
 public:
  TablePartitionCosts(std::vector<LayerCosts> layers, NetworkCosts network,
                      double memory_limit_bytes = std::numeric_limits<double>::infinity())
      : layers_(std::move(layers)), network_(network), memory_limit_bytes_(memory_limit_bytes) {}

  int NumLayers() const override { return static_cast<int>(layers_.size()); }

  double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                 int num_stages) const override {
    LayerCosts sum = Sum(first, last);
    double in_flight = static_cast<double>(num_stages - stage_index);
    if (sum.memory_bytes + sum.activation_bytes * in_flight > memory_limit_bytes_) {
      return std::numeric_limits<double>::infinity();
    }
    bool spans_nodes = first_unit / network_.units_per_node !=
                       (first_unit + replicas - 1) / network_.units_per_node;
    return sum.compute_ms / replicas + AllReduceMs(sum.param_bytes, replicas, spans_nodes);
  }

  double BoundaryMs(int last_of_left, int boundary_unit) const override {
    bool crosses_node = boundary_unit % network_.units_per_node == 0;
    double gbps = crosses_node ? network_.inter_gbps : network_.intra_gbps;
    return layers_[static_cast<std::size_t>(last_of_left)].activation_bytes / (gbps * 1e6);
  }

 private:
  LayerCosts Sum(int first, int last) const {
    LayerCosts sum;
    for (int l = first; l <= last; ++l) {
      const LayerCosts& layer = layers_[static_cast<std::size_t>(l)];
      sum.compute_ms += layer.compute_ms;
      sum.param_bytes += layer.param_bytes;
      sum.activation_bytes += layer.activation_bytes;
      sum.memory_bytes += layer.memory_bytes;
    }
    return sum;
  }

  double AllReduceMs(double bytes, int replicas, bool spans_nodes) const {
    if (replicas == 1) return 0;
    double gbps = spans_nodes ? network_.inter_gbps : network_.intra_gbps;
    return 2.0 * (replicas - 1) / replicas * bytes / (gbps * 1e6);
  }

  std::vector<LayerCosts> layers_;
  NetworkCosts network_;
  double memory_limit_bytes_;
};

}  // namespace trident
