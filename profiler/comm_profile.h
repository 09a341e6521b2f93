// Communication micro-benchmarks for `trident profile --comm`: the nccl-tests method run
// through a Comm, and the alpha/beta fit the planner reads from a cluster file's `measured:`.
//
// Groups (PlanCommGroups). World rank r sits on node r / devices_per_node (the rank map's
// placement). Measured: groups of 2, 4, 8, ... ranks and of min(devices_per_node, world) ranks
// inside node 0 (link intra_node); when the world spans nodes, groups of 2, 4, ... ranks and of
// every node's first rank, one rank per node (inter_node); and the whole world (inter_node
// when it spans nodes). Groups of 2 also measure point-to-point. Other ranks wait meanwhile.
//
// Sizes follow nccl-tests: B is the whole buffer of the operation, the same B the planner's
// cost model takes (planner/cost_model.h): p2p the message, all-reduce the buffer, all-gather
// the gathered (receive) buffer, reduce-scatter the scattered (send) buffer. For the last two
// B is rounded down to a multiple of 4·n bytes (a whole float per rank); sizes that round to
// nothing are skipped.
//
// Timing: each repeat starts after a barrier of the group; `warmup` repeats are untimed, then
// each of `iters` repeats is timed alone. time = median over repeats on each rank, then the
// largest over the group's ranks. p2p is a ping-pong between the pair: time = round trip / 2.
// Bandwidths (nccl-tests, doc/PERFORMANCE.md), n = ranks in the group:
//   algbw = B / time
//   busbw = algbw · factor;  factor = 2(n−1)/n all-reduce, (n−1)/n all-gather and
//                            reduce-scatter, 1 p2p
// busbw is what each rank's link carries, so it is comparable across n and to the hardware.
// Example: all-reduce of 64 MiB (67,108,864 B) over 4 ranks in 20,000 µs: algbw = 3.36 GB/s,
// busbw = 3.36 · 1.5 = 5.03 GB/s.
//
// Checking (nccl-tests' -c, on every repeat): rank k of a group sends Pattern(k, i) at element
// i, small integers whose every sum is exact in float; receive buffers are filled with NaN
// before each repeat (the in-place all-reduce buffer is refilled with the input), and every
// element of every result is compared with the exact answer. A mismatch fails the sweep on
// every rank of the group with the collective, size, group, repeat, rank, element and values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"

namespace trident {

// A group of world ranks measured together; rank i of the group is ranks[i].
struct CommGroup {
  LinkClass link = LinkClass::kIntraNode;
  std::vector<int> ranks;  // ascending
  bool operator==(const CommGroup&) const = default;
};

// The groups measured on `world_size` ranks (see the top of the file), without repeats,
// intra-node first. Example: 4 ranks, 2 per node: {0,1} intra_node; {0,2} and {0,1,2,3}
// inter_node. REQUIRES: world_size >= 1, devices_per_node >= 1.
std::vector<CommGroup> PlanCommGroups(int world_size, int devices_per_node);

// min, min·f, min·f², ... while <= max. Example: (4, 64, 4) -> 4, 16, 64.
// REQUIRES: 1 <= min_bytes <= max_bytes, step_factor >= 2.
std::vector<int64_t> MessageSizes(int64_t min_bytes, int64_t max_bytes, int step_factor);

// busbw / algbw for `collective` over `group_size` ranks (see the top of the file).
double BusBandwidthFactor(Collective collective, int group_size);
// B / time in GB/s (1e9 bytes per second). Example: 1,000,000 B in 100 µs -> 10 GB/s.
double AlgBandwidthGbPerS(double bytes, double time_us);

// The element rank `rank` of a group contributes at index `index`: an integer in [-510, 510]
// (so any sum over fewer than 32,000 ranks is exact in float) that differs between ranks fewer
// than 1,021 apart. REQUIRES: rank >= 0, index >= 0.
float CommPattern(int rank, int64_t index);

// One measured size: a row of the table.
struct CommPoint {
  Collective collective = Collective::kP2p;
  LinkClass link = LinkClass::kIntraNode;
  int group_size = 2;
  int64_t bytes = 0;   // B, after rounding (see the top of the file)
  double time_us = 0;  // median over repeats, largest over ranks
  double algbw_gb_per_s = 0;
  double busbw_gb_per_s = 0;
};

struct CommSweepOptions {
  int64_t min_bytes = 4;
  int64_t max_bytes = int64_t{64} << 20;
  int step_factor = 2;
  int warmup = 5;
  int iters = 20;
  int devices_per_node = 1;  // of the cluster: decides the link class of each group
  // How long a point-to-point transfer may wait for its peer.
  std::chrono::milliseconds p2p_timeout{std::chrono::minutes(5)};
  // Called on world rank 0 after each (group, collective) with a one-line progress message.
  std::function<void(const std::string&)> progress;

  // InvalidArgument naming the flag (--min-bytes, --max-bytes, --step-factor, --warmup,
  // --iters) when a value is out of range or the sizes give fewer than two points to fit.
  Status Validate() const;
};

// Measures every group of PlanCommGroups(world.Size(), options.devices_per_node), every
// collective and every size. Every rank of `world` calls it with the same options. The buffers
// it measures are fp32 tensors of `compute`: host memory (CpuCompute) for the MPI and
// in-process backends, device memory (CudaCompute) for NCCL, as the runtime's are; each result
// is copied back to the host for its check, outside the timing. Returns the
// points of the groups this rank belongs to (world rank 0 belongs to all: it gets every
// point), in the order measured. Fails with FailedPrecondition for a world of one rank,
// InvalidArgument for bad options, Internal for a wrong result (see the top of the file), or
// a Comm error. After a failure, ranks outside the failing group may still be waiting in a
// barrier: end the job (Comm::AbortJob; RunInProcess does it for in-process worlds).
StatusOr<std::vector<CommPoint>> RunCommSweep(Comm& world, Compute& compute,
                                              const CommSweepOptions& options);

// time_us = alpha_us + bytes / (beta_gb_per_s · 1e3), fitted by least squares with relative
// residuals (weights 1 / time²), so the few-µs latency of small messages and the bandwidth of
// large ones both count. When the intercept comes out negative it is set to 0 and the slope
// refitted through the origin. max_error_fraction = max |fit − time| / time over the points.
struct AlphaBetaFit {
  double alpha_us = 0;
  double beta_gb_per_s = 0;
  double max_error_fraction = 0;
};
// InvalidArgument when there are fewer than two distinct sizes, a time is not positive, or
// the time does not grow with the size (no bandwidth to fit).
StatusOr<AlphaBetaFit> FitAlphaBeta(std::span<const double> bytes, std::span<const double> time_us);

// A fit of one (collective, link class, group size) and how well it matches its points.
struct LinkFit {
  MeasuredLink link;
  double max_error_fraction = 0;
  int num_points = 0;
};

// One fit per (collective, link, group size) of `points`, in order of first appearance. A
// key that cannot be fitted is left out and explained in `notes`.
std::vector<LinkFit> FitMeasuredLinks(const std::vector<CommPoint>& points,
                                      std::vector<std::string>* notes);

// `cluster` with its measured: list replaced by `fits`. Fits the cluster format cannot hold
// (core/cluster.cc: an inter_node group larger than the nodes of one unit of the innermost
// level, the whole cluster without links.levels) are left out and
// explained in `notes`. REQUIRES: cluster.Validate() is ok; then so is the result.
ClusterSpec WithMeasuredLinks(const ClusterSpec& cluster, const std::vector<LinkFit>& fits,
                              std::vector<std::string>* notes);

}  // namespace trident
