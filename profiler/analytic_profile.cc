#include "profiler/analytic_profile.h"

#include <algorithm>
#include <utility>

#include "core/version.h"
#include "models/layer_cost.h"
#include "models/layer_gemms.h"

namespace trident {
namespace {

// What one device can do, in the units the time model uses.
struct DeviceRates {
  double flops_per_ms = 0;  // peak FLOP/s of the dtype / 1e3
  double bytes_per_ms = 0;  // achieved memory bandwidth (· efficiency.memory) / 1e3
  double launch_ms = 0;     // per GEMM kernel
  int64_t tile = 1;         // GEMM output tile (1: no quantization)
  const DeviceEfficiency* efficiency = nullptr;
  LinkSpec tp_link;  // the intra-node link: a tp group never leaves its node
  LinkSpec cp_link;  // the link of the level the cp group spans (ContextLink)
};

int64_t RoundUp(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// Roofline time of one GEMM at the device's efficiency for its size. Example A100 bf16
// (312 TFLOP/s, 2039 GB/s, memory efficiency 1), m 1024, n 1152, k 768, fraction 0.8: padded
// FLOPs 2·1024·1152·768 = 1.81 GFLOP -> 7.3 µs; bytes (m·k + k·n + m·n)·2 = 5.5 MB -> 2.7 µs;
// so compute-bound, 7.3 µs + 4 µs launch.
double GemmMs(const GemmShape& g, int64_t dtype_bytes, const DeviceRates& r) {
  double m = static_cast<double>(RoundUp(g.m, r.tile));
  double n = static_cast<double>(RoundUp(g.n, r.tile));
  double k = static_cast<double>(g.k);
  double count = static_cast<double>(g.count);
  double flops = 2.0 * m * n * k * count;  // one kernel: a batched product fills the GPU as one
  double compute = flops / (r.efficiency->GemmFraction(flops * 1e-9) * r.flops_per_ms);
  double bytes = (m * k + k * n + m * n) * count * static_cast<double>(dtype_bytes);
  return std::max(compute, bytes / r.bytes_per_ms) + r.launch_ms;
}

// The collectives of one pass over a group of t ranks joined by `link`.
double TrafficMs(const GroupTraffic& traffic, int t, const LinkSpec& link) {
  double ms = 0;
  for (auto [collective, calls] : {std::pair{Collective::kAllReduce, traffic.all_reduce},
                                   std::pair{Collective::kAllGather, traffic.all_gather},
                                   std::pair{Collective::kReduceScatter, traffic.reduce_scatter}}) {
    ms += RingCollectiveMs(collective, static_cast<double>(calls.bytes), t, link, calls.count);
  }
  return ms;
}

// The link a cp group's ring runs on: its ranks are cp tp-strided ranks within tp·cp consecutive
// ones starting at a multiple of tp·cp (core/rank_map.h), so every group stays in a node when
// tp·cp divides the devices per node; otherwise the widest level any group of the cluster spans
// (the slowest group sets the pace). Example dgx-h100 (8 per node), tp 8, cp 2: ranks 0 and 8,
// the inter-node link; 6 per node, tp 2, cp 2: ranks 4-7 straddle two nodes.
LinkSpec ContextLink(const ClusterSpec& cluster, int tp, int cp) {
  const int64_t group = int64_t{tp} * cp;
  int level = cluster.LevelSpanning(0, group - 1);
  for (int64_t first = group; first + group <= cluster.TotalDevices(); first += group) {
    level = std::max(level, cluster.LevelSpanning(first, first + group - 1));
  }
  return cluster.LinkOfLevel(level);
}

struct GemmTimes {
  double linear_ms = 0;
  double attention_ms = 0;      // the forward's attention products
  double attention_bwd_ms = 0;  // their input gradient
};

// Flash attention (core/model_spec.h) runs the forward's two products as one kernel, the
// scores never leaving the chip: compute-bound at the GEMM curve's fraction for its size, with
// causal masking skipping the tiles above the diagonal (half the products' FLOPs). Its
// backward recomputes the scores: five products where the forward has two, 2.5× the time
// (Dao, "FlashAttention-2", 2023, §3.1 and §4.1).
constexpr double kCausalShare = 0.5;
constexpr double kFlashBackwardRatio = 2.5;

double FlashForwardMs(double attention_flops, const DeviceRates& r) {
  if (attention_flops <= 0) return 0;
  const double flops = kCausalShare * attention_flops;
  return flops / (r.efficiency->GemmFraction(flops * 1e-9) * r.flops_per_ms) + r.launch_ms;
}

GemmTimes LayerGemmTimes(const ModelSpec& model, LayerKind kind, const LayerShape& shape,
                         const DeviceRates& r) {
  GemmTimes times;
  double attention_flops = 0;
  for (const GemmShape& g : LayerForwardGemms(model, kind, shape)) {
    if (!g.attention) {
      times.linear_ms += GemmMs(g, DTypeBytes(shape.dtype), r);
    } else if (model.attention == AttentionKind::kFlash) {
      attention_flops += g.Flops();
    } else {
      times.attention_ms += GemmMs(g, DTypeBytes(shape.dtype), r);
    }
  }
  if (model.attention == AttentionKind::kFlash) {
    times.attention_ms = FlashForwardMs(attention_flops, r);
    times.attention_bwd_ms = kFlashBackwardRatio * times.attention_ms;
  } else {
    times.attention_bwd_ms = 2 * times.attention_ms;  // both operands' gradients
  }
  return times;
}

int64_t OptimizerBytesPerParam(DType dtype) { return dtype == DType::kFp32 ? 8 : 12; }

// The memory-bound kernels one pass of a layer launches (the traffic they move is the 2 × stash
// term; each kernel also pays the launch cost, as a GEMM does). Counted as Megatron-LM's GPT
// layer launches them (megatron/model/transformer.py, ParallelTransformerLayer, 2022: one kernel
// each for LayerNorm, the fused scale-mask-softmax, dropout, the bias-GELU and the
// bias-dropout-add), and by the same rule (one kernel per elementwise step, fused as those are)
// for the other kinds:
//   gpt_block    forward 2 LayerNorms + softmax + attention dropout + the context's transpose
//                copy + bias-GELU + 2 bias-dropout-adds = 8; backward one gradient kernel for
//                each of those 8, the 4 linear layers' bias gradients, the 2 LayerNorms' weight
//                gradients and the 2 residual branches' gradient sums = 16; selective recompute
//                reruns softmax, dropout and the copy = 3
//   llama_block  forward 2 RMSNorms + RoPE of q and k (2) + SwiGLU + 2 residual adds = 7, and
//                softmax + the copy unfused = 9; backward 7 (9) gradients + 2 norm weights + 2
//                residual sums = 11 (13); selective 2
//   flash attention runs softmax, dropout and the copy inside its kernel: forward and backward
//                3 fewer (2 for llama), selective 0
//   embedding    lookup + learned-position add + dropout = 3 forward, 2 backward
//   final_norm   1 forward, 2 backward (input and weight gradients)
//   lm_head      the cross-entropy: max, exp-sum, loss = 3 forward, 1 backward
//   mlp_block    GELU + residual add = 2 forward; GELU gradient, 2 bias gradients and the
//                residual sum = 4 backward
struct KernelCounts {
  int fwd = 0;
  int bwd = 0;
  int selective = 0;
};

KernelCounts MemoryBoundKernels(const ModelSpec& model, LayerKind kind) {
  const bool flash = model.attention == AttentionKind::kFlash;
  switch (kind) {
    case LayerKind::kGptBlock:
      return flash ? KernelCounts{5, 13, 0} : KernelCounts{8, 16, 3};
    case LayerKind::kLlamaBlock:
      return flash ? KernelCounts{7, 11, 0} : KernelCounts{9, 13, 2};
    case LayerKind::kEmbedding:
      return {3, 2, 0};
    case LayerKind::kFinalNorm:
      return {1, 2, 0};
    case LayerKind::kLmHead:
      return {3, 1, 0};
    case LayerKind::kMlpBlock:
      return {2, 4, 0};
    case LayerKind::kGeneric:
      break;
  }
  return {};
}

ProfileEntry Entry(const ModelSpec& model, LayerKind kind, LayerShape shape, const DeviceRates& r) {
  LayerCost cost = AnalyticLayerCost(model, kind, shape);
  GemmTimes gemm = LayerGemmTimes(model, kind, shape, r);
  const KernelCounts kernels = MemoryBoundKernels(model, kind);
  double elementwise_ms = 2.0 * static_cast<double>(cost.stashed_bytes) / r.bytes_per_ms;
  ProfileEntry e;
  e.micro_batch = static_cast<int>(shape.micro_batch);
  e.tp = shape.tp;
  e.sequence_parallel = shape.sequence_parallel;
  e.cp = shape.cp;
  e.fwd_ms = gemm.linear_ms + gemm.attention_ms + elementwise_ms + kernels.fwd * r.launch_ms +
             TrafficMs(cost.tp_fwd, shape.tp, r.tp_link) +
             TrafficMs(cost.cp_fwd, shape.cp, r.cp_link);
  e.bwd_input_ms = gemm.linear_ms + gemm.attention_bwd_ms + 2 * elementwise_ms +
                   kernels.bwd * r.launch_ms + TrafficMs(cost.tp_bwd, shape.tp, r.tp_link) +
                   TrafficMs(cost.cp_bwd, shape.cp, r.cp_link);
  e.bwd_weight_ms = gemm.linear_ms + TrafficMs(cost.tp_wgrad, shape.tp, r.tp_link);
  e.param_bytes = cost.param_bytes;
  e.grad_bytes = cost.params * 4;
  e.optimizer_bytes = cost.params * OptimizerBytesPerParam(shape.dtype);
  e.output_bytes = cost.output_bytes;
  e.stashed_none_bytes = cost.stashed_bytes;
  shape.recompute = RecomputeMode::kSelective;
  LayerCost selective = AnalyticLayerCost(model, kind, shape);
  e.stashed_selective_bytes = selective.stashed_bytes;
  // Selective recompute reruns the attention core only where it dropped something (unfused).
  const int64_t dropped = cost.stashed_bytes - selective.stashed_bytes;
  e.recompute_selective_ms = dropped > 0 ? gemm.attention_ms +
                                               2.0 * static_cast<double>(dropped) / r.bytes_per_ms +
                                               kernels.selective * r.launch_ms
                                         : 0;
  shape.recompute = RecomputeMode::kFull;
  e.stashed_full_bytes = AnalyticLayerCost(model, kind, shape).stashed_bytes;
  // The rerun forward attends to the keys and values the input gradient gathers anyway.
  e.recompute_full_ms = e.fwd_ms - TrafficMs(cost.cp_fwd, shape.cp, r.cp_link);
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
  r.bytes_per_ms = cluster.device.memory_bw_gb_per_s * cluster.device.efficiency.memory * 1e6;
  r.launch_ms = gpu ? kGpuKernelLaunchUs * 1e-3 : 0;
  r.tile = gpu ? kGpuTile : 1;
  r.efficiency = &cluster.device.efficiency;
  r.tp_link = cluster.intra_node;
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

// The requested cp degrees, or DefaultContextDegrees.
StatusOr<std::vector<int>> ResolveCps(int64_t seq_len, const std::vector<int>& requested) {
  if (requested.empty()) return DefaultContextDegrees(seq_len);
  for (int c : requested) {
    if (c < 1 || (c > 1 && seq_len % (2 * c) != 0)) {
      return InvalidArgument("--cp " + std::to_string(c) + ": 2·cp must divide the sequence " +
                             std::to_string(seq_len) +
                             " (each cp rank holds 2 of its 2·cp chunks)");
    }
  }
  return requested;
}

// The entries of one layer at one micro-batch size: every tp and cp, with and without sequence
// parallelism where tp > 1 divides the cp rank's tokens.
void AddEntries(const ModelSpec& model, LayerKind kind, LayerShape shape,
                const ClusterSpec& cluster, DeviceRates rates, const std::vector<int>& tps,
                const std::vector<int>& cps, std::vector<ProfileEntry>* entries) {
  for (int tp : tps) {
    for (int cp : cps) {
      shape.tp = tp;
      shape.cp = cp;
      shape.sequence_parallel = false;
      rates.cp_link = ContextLink(cluster, tp, cp);
      entries->push_back(Entry(model, kind, shape, rates));
      if (tp == 1 || (shape.seq_len / cp) % tp != 0) continue;
      shape.sequence_parallel = true;
      entries->push_back(Entry(model, kind, shape, rates));
    }
  }
}

}  // namespace

std::vector<int> DefaultContextDegrees(int64_t seq_len) {
  std::vector<int> cps = {1};
  for (int c = 2; c <= kMaxDefaultCp && seq_len / c >= kMinContextTokens; c *= 2) {
    if (seq_len % (2 * c) == 0) cps.push_back(c);
  }
  return cps;
}

StatusOr<Profile> AnalyticProfile(const ModelSpec& model, const ClusterSpec& cluster,
                                  const AnalyticProfileOptions& options) {
  TRIDENT_RETURN_IF_ERROR(CheckNotGeneric(
      model, "it has no analytic costs",
      "give its profile with --profile (trident import writes it beside the model)"));
  TRIDENT_ASSIGN_OR_RETURN(DeviceRates rates, Rates(cluster, options.dtype));
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> tps, ResolveTps(model, cluster, options.tps));
  const int64_t seq_len = options.seq_len > 0 ? options.seq_len : model.max_seq_len;
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> cps, ResolveCps(seq_len, options.cps));
  Profile p;
  p.model = model.name;
  p.num_layers = model.NumLayers();
  p.seq_len = seq_len;
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
      LayerShape shape{mb, p.seq_len, 1, options.dtype, RecomputeMode::kNone};
      AddEntries(model, group.kind, shape, cluster, rates, tps, cps, &layer.entries);
    }
    p.layers.push_back(std::move(layer));
    first += group.repeat;
  }
  return p;
}

}  // namespace trident
