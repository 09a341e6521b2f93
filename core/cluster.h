// ClusterSpec: the hardware a plan runs on — identical nodes of identical devices, a fast
// link inside a node and a slower one between nodes, optionally further levels (nodes in a
// pod, pods in a rack, ...) each with its own link, and optionally measured alpha/beta
// figures per collective that override the link specification of levels 0 and 1.
//
// Levels, innermost first (NumLevels() of them): level 0 joins the devices of one node
// (intra_node); level 1 the nodes of one unit of levels[0] (inter_node; the whole cluster when
// `levels` is empty); level 1 + i the units of levels[i - 1] inside one unit of levels[i], or
// inside the whole cluster for the outermost. Ranks are numbered node-major: rank r is on node
// r / devices_per_node. Example: 4 devices per node, 8 nodes, levels [{pod, nodes: 2}]: ranks
// 0-3 share a node (level 0), ranks 0-7 a pod (level 1, inter_node), ranks 0-15 span two pods
// (level 2, the pod link).
//
// Units: memory in GiB (2^30 bytes), bandwidth in GB/s (10^9 bytes per second, one
// direction, per device), latency in microseconds, compute in TFLOP/s (10^12 FLOP/s).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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

// A link as collectives use it. `efficiency` is the fraction of bw_gb_per_s that a large
// collective's bus bandwidth reaches (nccl-tests' busbw over the wire rate; protocol, chunking
// and synchronization eat the rest): the time models divide by bw_gb_per_s · efficiency.
struct LinkSpec {
  double bw_gb_per_s = 0.0;
  double latency_us = 0.0;  // per hop (ring step)
  double efficiency = 1.0;  // (0, 1]; absent from a file: 1
  // A collective's fixed cost beyond its hops (NCCL's base latency); not paid by p2p. Absent
  // from a file: 0.
  double collective_latency_us = 0.0;
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

// One level above the node: units (a pod, a rack) of `nodes` nodes each, joined to one another
// by `link`.
struct LinkLevel {
  std::string name;
  int nodes = 2;
  LinkSpec link;
  bool operator==(const LinkLevel&) const = default;
};

// One point of a GEMM efficiency curve: a product of `gflop` GFLOP (2·m·n·k / 1e9) reaches
// `fraction` of the device's peak.
struct EfficiencyPoint {
  double gflop = 0.0;
  double fraction = 0.0;
  bool operator==(const EfficiencyPoint&) const = default;
};

// How close a device's kernels come to its datasheet figures (the cluster file's
// device.efficiency; profiler/analytic_profile.h uses them).
//  - gemm: the fraction of peak_tflops a GEMM reaches as a function of its size, points in
//    ascending gflop; between points linear in log(gflop), beyond the ends the end's fraction.
//    Small products fall short of peak (too few tiles to fill the device, fixed prologue and
//    epilogue); large ones reach the device's maximum achievable matmul rate.
//  - clock: the fraction of the clock peak_tflops is quoted at that the device sustains under
//    hours of dense tensor-core load at its power limit; it scales the GEMM curve (a short
//    benchmark runs at the boost clock, a training run at the sustained one).
//  - memory: the fraction of memory_bw_gb_per_s that memory-bound kernels (norms, softmax,
//    activations, dropout, residual adds, the optimizer) reach.
// Absent from a file: kDefaultGemmFraction at every size, clock 1, memory 1.
struct DeviceEfficiency {
  static constexpr double kDefaultGemmFraction = 0.8;
  std::vector<EfficiencyPoint> gemm = {{1.0, kDefaultGemmFraction}};
  double clock = 1.0;
  double memory = 1.0;
  // The fraction of peak a product of `gflop` GFLOP reaches in training: the curve's value
  // there times `clock`. REQUIRES: gemm is non-empty.
  double GemmFraction(double gflop) const;
  bool operator==(const DeviceEfficiency&) const = default;
};

// Device memory the model's tensors cannot use, as named constants (the cluster file's
// device.memory_overhead), so a predicted peak can be set beside a measured one:
//  - context_gib: the CUDA context (the driver's state and the loaded kernels' code);
//  - communication_gib: the communication library's buffers (NCCL's per channel and peer, for
//    every communicator of a rank: tp, cp, dp, pipeline, tied embedding);
//  - workspace_gib: library workspaces (cuBLAS, attention kernels);
//  - fragmentation: the share of the activations' allocations the caching allocator holds but
//    cannot reuse (blocks split for tensors of other sizes).
// Absent from a file: kGpuDefault on a GPU (the 2 GiB planners commonly leave aside, split as
// below; estimates), nothing on a CPU.
struct MemoryOverhead {
  double context_gib = 0.0;
  double communication_gib = 0.0;
  double workspace_gib = 0.0;
  double fragmentation = 0.0;
  int64_t ReservedBytes() const;  // context + communication + workspace
  bool operator==(const MemoryOverhead&) const = default;
};
inline constexpr MemoryOverhead kGpuDefaultOverhead{0.5, 1.0, 0.5, 0.0};

struct DeviceSpec {
  std::string name;
  DeviceKind kind = DeviceKind::kGpu;
  double memory_gib = 0.0;
  std::map<DType, double> peak_tflops;  // dense peak per dtype; absent = unsupported
  double memory_bw_gb_per_s = 0.0;
  DeviceEfficiency efficiency;
  std::optional<MemoryOverhead> memory_overhead;  // absent: OverheadOrDefault()'s default
  // memory_overhead, or the kind's default: kGpuDefaultOverhead on a GPU, none on a CPU.
  MemoryOverhead OverheadOrDefault() const;
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
  std::vector<LinkLevel> levels;  // inner to outer; each unit a multiple of the one inside it
  std::vector<MeasuredLink> measured;

  bool operator==(const ClusterSpec&) const = default;

  // At most limits::kMaxDevices once Check() has passed, so it fits in int.
  int64_t TotalDevices() const { return int64_t{nodes} * devices_per_node; }
  int64_t DeviceMemoryBytes() const;

  // The levels of the hierarchy (top of the file): 2 + levels.size().
  int NumLevels() const { return 2 + static_cast<int>(levels.size()); }
  // The innermost level one of whose units holds every rank in [first_rank, last_rank]: 0 when
  // the range lies inside one node, NumLevels() - 1 when only the whole cluster holds it.
  // REQUIRES: Check() has passed, 0 <= first_rank <= last_rank.
  int LevelSpanning(int64_t first_rank, int64_t last_rank) const;
  // The link joining the units of `level`: intra_node, inter_node, levels[level - 2].link.
  // REQUIRES: 0 <= level < NumLevels().
  LinkSpec LinkOfLevel(int level) const;
  // "intra_node", "inter_node", levels[level - 2].name. REQUIRES: 0 <= level < NumLevels().
  std::string LevelName(int level) const;
  // Nodes in one unit of `level` >= 1: levels[level - 1].nodes, or `nodes` for the outermost.
  // REQUIRES: 1 <= level < NumLevels().
  int NodesPerUnit(int level) const;

  FieldCheck Check() const;
  Status Validate() const { return ToStatus(Check()); }
  std::string ToString() const;
};

// Milliseconds for `calls` ring collectives of `bytes` in all (an all-gather's gathered output,
// a reduce-scatter's input) over n ranks joined by `link`, at the achieved bandwidth
// bw = bw_gb_per_s · efficiency (Thakur et al., "Optimization of Collective Communication
// Operations in MPICH", 2005; NCCL's "Performance" notes for the busbw factors):
//   p2p              calls·α + B/bw
//   all-reduce       calls·(α0 + 2(n−1)·α) + 2(n−1)/n · B/bw
//   all-gather,
//   reduce-scatter   calls·(α0 + (n−1)·α) + (n−1)/n · B/bw
// with α the link's latency_us and α0 its collective_latency_us (NCCL's latency model, src/
// graph/tuning.cc: a ring collective costs a base latency plus one per step). 0 when n <= 1 or
// there is nothing to send. Example: one all-reduce of 1 GB over 8 ranks at 25 GB/s, efficiency
// 1, α 5 µs, α0 0: 14·5 µs + 1.75·40 ms = 70.07 ms.
double RingCollectiveMs(Collective collective, double bytes, int n, const LinkSpec& link,
                        int64_t calls = 1);

StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text, const std::string& file);
StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path);
std::string ClusterSpecToYaml(const ClusterSpec& spec);

}  // namespace trident
