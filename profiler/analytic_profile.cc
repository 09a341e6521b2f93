#include "profiler/analytic_profile.h"

#include <algorithm>

#include "core/version.h"
#include "models/layer_cost.h"
#include "models/layer_gemms.h"

namespace trident {
namespace {

// What one device can do, in the units the time model uses.
struct DeviceRates {
  double flops_per_ms = 0;       // peak FLOP/s of the dtype / 1e3
  double bytes_per_ms = 0;       // memory bandwidth / 1e3
  double launch_ms = 0;          // per GEMM kernel
  int64_t tile = 1;              // GEMM output tile (1: no quantization)
  double link_bytes_per_ms = 0;  // intra-node link, one direction
  double link_latency_ms = 0;
};

int64_t RoundUp(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// Roofline time of one GEMM. Example A100 bf16 (312 TFLOP/s, 2039 GB/s), m 1024, n 1152,
// k 768: padded FLOPs 2·1024·1152·768 = 1.81 GFLOP -> 7.3 µs at 80%; bytes (m·k + k·n +
// m·n)·2 = 5.5 MB -> 2.7 µs; so compute-bound, 7.3 µs + 4 µs launch.
double GemmMs(const GemmShape& g, int64_t dtype_bytes, const DeviceRates& r) {
  double m = static_cast<double>(RoundUp(g.m, r.tile));
  double n = static_cast<double>(RoundUp(g.n, r.tile));
  double k = static_cast<double>(g.k);
  double count = static_cast<double>(g.count);
  double compute = 2.0 * m * n * k * count / (kGemmEfficiency * r.flops_per_ms);
  double bytes = (m * k + k * n + m * n) * count * static_cast<double>(dtype_bytes);
  return std::max(compute, bytes / r.bytes_per_ms) + r.launch_ms;
}

// `calls` ring collectives over t ranks of `bytes` in all, each of `phases` halves: an
// all-reduce is a reduce-scatter then an all-gather, each rank sending and receiving (t−1)/t of
// the payload in t−1 steps per half. Example one all-reduce, t 8, 6 MiB over 300 GB/s:
// 1.75 · 6.29 MB / 300 GB/s = 36.7 µs + 14 · 3 µs latency = 78.7 µs.
double RingMs(const TpCalls& calls, int phases, int t, const DeviceRates& r) {
  if (t <= 1 || calls.count == 0) return 0;
  double steps = static_cast<double>(phases) * (t - 1);
  return steps / t * static_cast<double>(calls.bytes) / r.link_bytes_per_ms +
         steps * calls.count * r.link_latency_ms;
}

double TpTrafficMs(const TpTraffic& traffic, int t, const DeviceRates& r) {
  return RingMs(traffic.all_reduce, 2, t, r) + RingMs(traffic.all_gather, 1, t, r) +
         RingMs(traffic.reduce_scatter, 1, t, r);
}

struct GemmTimes {
  double linear_ms = 0;
  double attention_ms = 0;
};

GemmTimes LayerGemmTimes(const ModelSpec& model, LayerKind kind, const LayerShape& shape,
                         const DeviceRates& r) {
  GemmTimes times;
  for (const GemmShape& g : LayerForwardGemms(model, kind, shape)) {
    double ms = GemmMs(g, DTypeBytes(shape.dtype), r);
    (g.attention ? times.attention_ms : times.linear_ms) += ms;
  }
  return times;
}

int64_t OptimizerBytesPerParam(DType dtype) { return dtype == DType::kFp32 ? 8 : 12; }

ProfileEntry Entry(const ModelSpec& model, LayerKind kind, LayerShape shape, const DeviceRates& r) {
  LayerCost cost = AnalyticLayerCost(model, kind, shape);
  GemmTimes gemm = LayerGemmTimes(model, kind, shape, r);
  double elementwise_ms = 2.0 * static_cast<double>(cost.stashed_bytes) / r.bytes_per_ms;
  ProfileEntry e;
  e.micro_batch = static_cast<int>(shape.micro_batch);
  e.tp = shape.tp;
  e.sequence_parallel = shape.sequence_parallel;
  e.fwd_ms =
      gemm.linear_ms + gemm.attention_ms + elementwise_ms + TpTrafficMs(cost.tp_fwd, shape.tp, r);
  e.bwd_input_ms = gemm.linear_ms + 2 * gemm.attention_ms + 2 * elementwise_ms +
                   TpTrafficMs(cost.tp_bwd, shape.tp, r);
  e.bwd_weight_ms = gemm.linear_ms + TpTrafficMs(cost.tp_wgrad, shape.tp, r);
  e.param_bytes = cost.param_bytes;
  e.grad_bytes = cost.params * 4;
  e.optimizer_bytes = cost.params * OptimizerBytesPerParam(shape.dtype);
  e.output_bytes = cost.output_bytes;
  e.stashed_none_bytes = cost.stashed_bytes;
  shape.recompute = RecomputeMode::kSelective;
  LayerCost selective = AnalyticLayerCost(model, kind, shape);
  e.stashed_selective_bytes = selective.stashed_bytes;
  e.recompute_selective_ms =
      gemm.attention_ms +
      2.0 * static_cast<double>(cost.stashed_bytes - selective.stashed_bytes) / r.bytes_per_ms;
  shape.recompute = RecomputeMode::kFull;
  e.stashed_full_bytes = AnalyticLayerCost(model, kind, shape).stashed_bytes;
  e.recompute_full_ms = e.fwd_ms;
  return e;
}

StatusOr<DeviceRates> Rates(const ClusterSpec& cluster, DType dtype) {
  auto peak = cluster.device.peak_tflops.find(dtype);
  if (peak == cluster.device.peak_tflops.end()) {
    return InvalidArgument("cluster " + cluster.name + ": device " + cluster.device.name +
                           " has no peak_tflops for " + DTypeName(dtype) +
                           "; add it to device.peak_tflops or pick another --dtype");
  }
  bool gpu = cluster.device.kind == DeviceKind::kGpu;
  DeviceRates r;
  r.flops_per_ms = peak->second * 1e9;
  r.bytes_per_ms = cluster.device.memory_bw_gb_per_s * 1e6;
  r.launch_ms = gpu ? kGpuKernelLaunchUs * 1e-3 : 0;
  r.tile = gpu ? kGpuTile : 1;
  r.link_bytes_per_ms = cluster.intra_node.bw_gb_per_s * 1e6;
  r.link_latency_ms = cluster.intra_node.latency_us * 1e-3;
  return r;
}

StatusOr<std::vector<int>> ResolveTps(const ModelSpec& model, const ClusterSpec& cluster,
                                      const std::vector<int>& requested) {
  std::vector<int> tps;
  if (requested.empty()) {
    for (int t = 1; t <= cluster.devices_per_node; ++t) {
      if (cluster.devices_per_node % t == 0 && model.TensorParallelProblem(t).empty()) {
        tps.push_back(t);
      }
    }
    return tps;
  }
  for (int t : requested) {
    if (std::string problem = model.TensorParallelProblem(t); !problem.empty()) {
      return InvalidArgument("--tp: " + problem + " of " + model.name);
    }
  }
  return requested;
}

}  // namespace

StatusOr<Profile> AnalyticProfile(const ModelSpec& model, const ClusterSpec& cluster,
                                  const AnalyticProfileOptions& options) {
  TRIDENT_RETURN_IF_ERROR(CheckNotGeneric(
      model, "it has no analytic costs",
      "give its profile with --profile (trident import writes it beside the model)"));
  TRIDENT_ASSIGN_OR_RETURN(DeviceRates rates, Rates(cluster, options.dtype));
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> tps, ResolveTps(model, cluster, options.tps));
  Profile p;
  p.model = model.name;
  p.num_layers = model.NumLayers();
  p.seq_len = options.seq_len > 0 ? options.seq_len : model.max_seq_len;
  p.dtype = options.dtype;
  p.device_kind = cluster.device.kind;
  p.device = cluster.device.name + " of " + cluster.name;
  p.build = TridentBuild();
  p.date = UtcTimestamp();
  p.method = {ProfileSource::kAnalytic, 0, 0};
  int first = 0;
  for (const LayerGroup& group : model.layers) {
    LayerProfile layer{first, group.repeat, group.kind, {}};
    for (int mb : options.micro_batches) {
      for (int tp : tps) {
        LayerShape shape{mb, p.seq_len, tp, options.dtype, RecomputeMode::kNone};
        layer.entries.push_back(Entry(model, group.kind, shape, rates));
        if (tp == 1 || p.seq_len % tp != 0) continue;
        shape.sequence_parallel = true;
        layer.entries.push_back(Entry(model, group.kind, shape, rates));
      }
    }
    p.layers.push_back(std::move(layer));
    first += group.repeat;
  }
  return p;
}

}  // namespace trident
