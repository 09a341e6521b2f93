// ClusterSpec: the hardware a plan runs on — identical nodes of identical devices, a fast
// link inside a node and a slower one between nodes, optionally with measured alpha/beta
// figures per collective that override the link specification.
//
// Units: memory in GiB (2^30 bytes), bandwidth in GB/s (10^9 bytes per second, one
// direction, per device), latency in microseconds, compute in TFLOP/s (10^12 FLOP/s).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/field_error.h"
#include "core/names.h"
#include "core/status.h"

namespace trident {

enum class DeviceKind { kCpu, kGpu };
const NameTable<DeviceKind>& DeviceKindNames();

enum class LinkClass { kIntraNode, kInterNode };
const NameTable<LinkClass>& LinkClassNames();

enum class Collective { kP2p, kAllReduce, kAllGather, kReduceScatter };
const NameTable<Collective>& CollectiveNames();

struct LinkSpec {
  double bw_gb_per_s = 0.0;
  double latency_us = 0.0;
  bool operator==(const LinkSpec&) const = default;
};

// A fitted time(bytes) = alpha_us + bytes / (beta_gb_per_s · 1e3) microseconds for one
// collective over `group_size` ranks on one link class (as `trident profile --comm` writes).
struct MeasuredLink {
  Collective collective = Collective::kP2p;
  LinkClass link = LinkClass::kIntraNode;
  int group_size = 2;
  double alpha_us = 0.0;
  double beta_gb_per_s = 0.0;
  bool operator==(const MeasuredLink&) const = default;
};

struct DeviceSpec {
  std::string name;
  DeviceKind kind = DeviceKind::kGpu;
  double memory_gib = 0.0;
  std::map<DType, double> peak_tflops;  // dense peak per dtype; absent = unsupported
  double memory_bw_gb_per_s = 0.0;
  bool operator==(const DeviceSpec&) const = default;
};

struct ClusterSpec {
  static constexpr int kFormatVersion = 1;

  std::string name;
  int nodes = 1;
  int devices_per_node = 1;
  DeviceSpec device;
  LinkSpec intra_node;
  LinkSpec inter_node;
  std::vector<MeasuredLink> measured;

  bool operator==(const ClusterSpec&) const = default;

  // At most limits::kMaxDevices once Check() has passed, so it fits in int.
  int64_t TotalDevices() const { return int64_t{nodes} * devices_per_node; }
  int64_t DeviceMemoryBytes() const;

  FieldCheck Check() const;
  Status Validate() const { return ToStatus(Check()); }
  std::string ToString() const;
};

StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text, const std::string& file);
StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path);
std::string ClusterSpecToYaml(const ClusterSpec& spec);

}  // namespace trident
