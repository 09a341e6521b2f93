#include "planner/assumptions.h"

#include <algorithm>

#include "core/text_format.h"
#include "models/layer_gemms.h"

namespace trident {
namespace {

std::string Fraction(double f) { return FormatFixed(f, 2); }

// The first transformer block of the model, or -1 when it has none.
int FirstBlock(const ModelSpec& model) {
  for (int i = 0; i < model.NumLayers(); ++i) {
    LayerKind kind = model.LayerAt(i);
    if (kind == LayerKind::kGptBlock || kind == LayerKind::kLlamaBlock ||
        kind == LayerKind::kMlpBlock) {
      return i;
    }
  }
  return -1;
}

// The block's linear GEMMs at the plan's shape: the fraction of peak the largest and the
// smallest reach.
std::string GemmLine(const Plan& plan, const ClusterSpec& cluster) {
  const int block = FirstBlock(plan.model);
  auto peak = cluster.device.peak_tflops.find(plan.dtype);
  if (block < 0 || peak == cluster.device.peak_tflops.end()) return "";
  LayerShape shape{plan.micro_batch_size, plan.seq_len,           plan.mesh.tp, plan.dtype,
                   RecomputeMode::kNone,  plan.sequence_parallel, plan.mesh.cp};
  double largest = 0, smallest = 0;
  for (const GemmShape& g : LayerForwardGemms(plan.model, plan.model.LayerAt(block), shape)) {
    if (g.attention) continue;
    largest = std::max(largest, g.Flops());
    smallest = smallest == 0 ? g.Flops() : std::min(smallest, g.Flops());
  }
  const DeviceEfficiency& e = cluster.device.efficiency;
  return "  GEMMs: " + Fraction(e.GemmFraction(largest * 1e-9)) + " of " +
         FormatFixed(peak->second, 0) + " TFLOP/s at the block's largest (" +
         FormatFixed(largest * 1e-9, 1) + " GFLOP), " + Fraction(e.GemmFraction(smallest * 1e-9)) +
         " at its smallest (" + FormatFixed(smallest * 1e-9, 1) + " GFLOP); attention " +
         (plan.model.attention == AttentionKind::kFlash ? "flash" : "unfused") + "\n";
}

std::string LinkLine(const std::string& what, const LinkSpec& link) {
  return "  " + what + ": " + Fraction(link.efficiency) + " of " +
         FormatFixed(link.bw_gb_per_s, 0) + " GB/s (" +
         FormatFixed(link.bw_gb_per_s * link.efficiency, 0) + " GB/s achieved), " +
         FormatFixed(link.latency_us, 1) + " µs a hop" +
         (link.collective_latency_us > 0
              ? " + " + FormatFixed(link.collective_latency_us, 1) + " µs a collective"
              : std::string()) +
         "\n";
}

std::string SyncLine(const Evaluation& ev) {
  if (ev.sync_ms <= 0) return "  gradient sync: none (one replica, no cp)\n";
  const double hidden = std::clamp(1 - ev.exposed_sync_ms / ev.sync_ms, 0.0, 1.0);
  return "  gradient sync: " + FormatMs(ev.sync_ms) + " on the slowest position, " +
         FormatFixed(100 * hidden, 0) + "% hidden behind the other positions' work\n";
}

}  // namespace

std::string AssumptionsText(const Plan& plan, const Evaluation& evaluation,
                            const ClusterSpec& cluster, ProfileSource source) {
  std::string text = "assumptions (" + cluster.name + ", planner/README.md):\n";
  if (source == ProfileSource::kAnalytic) {
    text += GemmLine(plan, cluster) +
            "  memory-bound kernels: " + Fraction(cluster.device.efficiency.memory) + " of " +
            FormatFixed(cluster.device.memory_bw_gb_per_s, 0) + " GB/s\n";
  } else {
    text += "  layer times: the " + NameOf(ProfileSourceNames(), source) + " profile's\n";
  }
  text += LinkLine("intra_node link", cluster.intra_node) +
          LinkLine("inter_node link", cluster.inter_node) + SyncLine(evaluation);
  return text;
}

}  // namespace trident
