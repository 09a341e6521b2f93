// CostModel: everything the search may know about costs. The search never reads files or
// hardware specs; it asks this interface (tests plug in tables with known answers).
//
// Layer costs come from a profile (measured on the device, or computed analytically from a
// hardware description by profiler/analytic_profile.h), their times multiplied by the
// profile's load factor (core/profile.h). Communication follows alpha-beta on the link of
// the cluster level a group spans (core/cluster.h: a ring runs at its slowest hop, the
// widest level it crosses; PipeDream §3.1), as RingCollectiveMs (core/cluster.h) prices it:
// ring factors on the link's achieved bandwidth, bw_gb_per_s · efficiency.
// At levels 0 (intra_node) and 1 (inter_node), a measured figure for the same collective,
// link class and group size (cluster file, `measured:`) replaces the formula: α + B/β; the
// levels above have no measured figures.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/profile.h"

namespace trident {

class CostModel {
 public:
  virtual ~CostModel() = default;

  virtual int NumLayers() const = 0;
  // Costs of layer `index` at (micro_batch, tp, sequence_parallel, cp) on one rank, or nullptr
  // when unknown.
  virtual const ProfileEntry* Layer(int index, int micro_batch, int tp, bool sequence_parallel,
                                    int cp) const = 0;
  // Micro-batch sizes, tp and cp degrees for which every layer has costs, ascending.
  virtual std::vector<int> MicroBatches() const = 0;
  virtual std::vector<int> TensorParallelDegrees() const = 0;
  virtual std::vector<int> ContextParallelDegrees() const = 0;

  // `collective` of `bytes` over `group_size` ranks whose widest pair spans `level` (see
  // LevelSpanning). REQUIRES: 0 <= level < the cluster's level count.
  virtual double CollectiveMsAtLevel(Collective collective, double bytes, int group_size,
                                     int level) const = 0;
  // The innermost level one of whose units holds ranks first_rank..last_rank (node-major
  // ranks, core/cluster.h); 0 inside a node. REQUIRES: 0 <= first_rank <= last_rank.
  virtual int LevelSpanning(int first_rank, int last_rank) const = 0;
  // CollectiveMsAtLevel at level 0 (intra_node) or 1 (inter_node).
  double CollectiveMs(Collective collective, double bytes, int group_size, LinkClass link) const {
    return CollectiveMsAtLevel(collective, bytes, group_size,
                               link == LinkClass::kIntraNode ? 0 : 1);
  }
  // One optimizer step that moves `bytes` (OptimizerStepBytes of memory_model.h), at the
  // memory-bound kernels' bandwidth.
  virtual double OptimizerMs(double bytes) const = 0;

  virtual int64_t DeviceMemoryBytes() const = 0;
  // Memory a device cannot give to the model: runtime context, library workspaces,
  // communication buffers (core/cluster.h, MemoryOverhead).
  virtual int64_t ReservedBytes() const = 0;
  // The share of the activations' allocations held but not reusable (MemoryOverhead).
  virtual double ActivationFragmentation() const { return 0; }
  virtual int DevicesPerNode() const = 0;
  virtual int64_t TotalDevices() const = 0;
};

// The cost model of a profile on a cluster. Both must outlive it.
// REQUIRES: profile.Validate() and cluster.Validate() are ok.
class ProfileCostModel : public CostModel {
 public:
  ProfileCostModel(const Profile& profile, const ClusterSpec& cluster);

  int NumLayers() const override { return profile_.num_layers; }
  const ProfileEntry* Layer(int index, int micro_batch, int tp, bool sequence_parallel,
                            int cp) const override;
  std::vector<int> MicroBatches() const override { return micro_batches_; }
  std::vector<int> TensorParallelDegrees() const override { return tps_; }
  std::vector<int> ContextParallelDegrees() const override { return cps_; }
  double CollectiveMsAtLevel(Collective collective, double bytes, int group_size,
                             int level) const override;
  int LevelSpanning(int first_rank, int last_rank) const override {
    return cluster_.LevelSpanning(first_rank, last_rank);
  }
  double OptimizerMs(double bytes) const override;
  int64_t DeviceMemoryBytes() const override { return cluster_.DeviceMemoryBytes(); }
  int64_t ReservedBytes() const override;
  double ActivationFragmentation() const override {
    return cluster_.device.OverheadOrDefault().fragmentation;
  }
  int DevicesPerNode() const override { return cluster_.devices_per_node; }
  int64_t TotalDevices() const override { return cluster_.TotalDevices(); }

 private:
  const Profile& profile_;
  const ClusterSpec& cluster_;
  std::vector<int> micro_batches_;
  std::vector<int> tps_;
  std::vector<int> cps_;
  std::vector<LayerProfile> layers_;  // the profile's, times scaled by its load factor
  // layer_of_[index] points at the item of layers_ that covers that layer.
  std::vector<const LayerProfile*> layer_of_;
};

}  // namespace trident
