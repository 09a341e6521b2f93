// Analytic profiles: the profile a device would measure, computed from the model's shapes and
// the cluster's hardware description, so a cluster nobody here owns can be planned for. The
// result has the same format as a measured profile (method.source: analytic), so the
// planner has one input path.
//
// Time model, per layer and micro-batch on one rank of a tp group, from the device's
// datasheet figures and its device.efficiency (core/cluster.h):
//  - GEMMs (models/layer_gemms.h) on a roofline: max(FLOPs / (f(FLOPs) · peak),
//    bytes / achieved memory bandwidth), f the device's GEMM efficiency curve at the
//    product's size, the m and n dimensions padded to the GPU's tile (kGpuTile: tile
//    quantization) and a fixed launch cost per kernel on GPUs;
//  - memory-bound work (norms, softmax, GELU, residual adds, dropout, loss) as 2 × the bytes
//    the layer stashes (every stashed tensor is written once and read back at least once),
//    twice that in backward, at the achieved memory bandwidth, memory_bw_gb_per_s ·
//    efficiency.memory, plus the launch cost for each of its memory-bound kernels on GPUs (a
//    GPT block: 8 forward, 16 backward, 3 rerun by selective recompute; analytic_profile.cc,
//    MemoryBoundKernels, counts every kind);
//  - the layer's tp collectives as rings over the intra-node link (a tp group never spans
//    nodes), priced by RingCollectiveMs (core/cluster.h) at the link's achieved bandwidth, on
//    the critical path;
//  - the layer's cp collectives (the attention's K/V all-gathers, forward and input gradient,
//    and the dK/dV reduce-scatter) as the same rings over c ranks, on the link of the level
//    the cp groups span: inside a node when tp·cp divides the devices per node, else the inter-node
//    link (or a wider level's); blocking, in the pass that issues them. A full recompute's
//    rerun forward uses the input gradient's gather, so it costs the forward without it.
// Every tp > 1 that divides the cp rank's tokens gets a second entry with sequence parallelism.
// Every cp degree gets its entries (AnalyticProfileOptions::cps).
// Backward splits as in models/layer_cost.h: input gradient = linear GEMMs + 2 × attention
// GEMMs, weight gradient = linear GEMMs. Selective recompute reruns the attention GEMMs and
// their memory-bound work; full recompute reruns the forward.
// Flash attention (the model's `attention: flash`) runs the two attention products as one
// kernel: compute-bound at the GEMM curve, half their FLOPs under the causal mask, 2.5× that
// in backward (which recomputes the scores); no scores are stashed, so no softmax or dropout
// traffic is counted and selective recompute has nothing to rerun.
//
// Memory per layer (Rajbhandari et al., "ZeRO", 2020, §3.1, with Megatron-LM's fp32 gradient
// accumulation): parameters in the training dtype, gradients in fp32 (4 bytes), optimizer
// state 8 bytes (Adam moments) for fp32 training or 12 bytes (fp32 master copy + moments)
// for 16-bit training.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/profile.h"
#include "core/status.h"

namespace trident {

// Tensor-core GEMM kernels compute in 128 × 128 output tiles; partial tiles cost whole ones.
inline constexpr int64_t kGpuTile = 128;
// Launch and scheduling cost of one GPU kernel, microseconds.
inline constexpr double kGpuKernelLaunchUs = 4.0;

// Default cp degrees: up to 32 (Llama 3 405B trained 128K-token sequences at cp 16, Dubey et
// al. 2024 §3.3.2), and no cp rank below 1,024 tokens of a sequence, where the K/V gathers
// of a whole sequence outweigh the rank's attention work. Shorter sequences thus get fewer
// entries and the search stays fast: seq 2,048 has cp 1 and 2.
inline constexpr int kMaxDefaultCp = 32;
inline constexpr int64_t kMinContextTokens = 1024;

struct AnalyticProfileOptions {
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> tps;  // empty: every divisor of devices_per_node that shards the model
  int64_t seq_len = 0;   // 0: the model's max_seq_len
  DType dtype = DType::kBf16;
  std::vector<int> cps;  // context-parallel degrees; empty: DefaultContextDegrees(seq_len)
};

// 1, and every power of two up to kMaxDefaultCp that cuts seq_len into 2·cp chunks and leaves
// each cp rank at least kMinContextTokens of it. Example seq 8192: 1, 2, 4, 8; seq 131072:
// 1 ... 32; seq 2048: 1, 2.
std::vector<int> DefaultContextDegrees(int64_t seq_len);

// Fails when the cluster's device has no peak for `dtype`, when a tp does not shard the model,
// when 2·cp does not divide the sequence for a requested cp, or when the model has generic layers
// (their costs come only from a profile).
StatusOr<Profile> AnalyticProfile(const ModelSpec& model, const ClusterSpec& cluster,
                                  const AnalyticProfileOptions& options);

}  // namespace trident
