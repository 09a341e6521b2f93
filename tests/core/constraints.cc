#include "tests/core/constraints.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

namespace trident::testing {
namespace {

// The limits of core/README.md, as literals.
constexpr int64_t kDevices = 1048576;
constexpr int64_t kLayers = 100000;
constexpr int64_t kHeads = 1024;
constexpr int64_t kMicroBatch = 65536;
constexpr int64_t kMicroBatchTokens = 16777216;

bool In(int64_t value, int64_t min, int64_t max) { return value >= min && value <= max; }
bool Finite(double value) { return std::isfinite(value); }
bool NonNegative(double value) { return Finite(value) && value >= 0; }
bool Positive(double value) { return Finite(value) && value > 0; }

std::string Sizes(const ModelSpec& m) {
  if (!In(m.vocab_size, 1, 4194304)) return "vocab_size";
  if (!In(m.max_seq_len, 1, 1048576)) return "max_seq_len";
  if (!In(m.hidden, 1, 65536)) return "hidden";
  if (!In(m.heads, 1, kHeads) || m.hidden % m.heads != 0) return "heads";
  if (!In(m.kv_heads, 1, m.heads) || m.heads % m.kv_heads != 0) return "kv_heads";
  if (!In(m.ffn_hidden, 1, 262144)) return "ffn_hidden";
  if (!(Finite(m.dropout) && m.dropout >= 0 && m.dropout < 1)) return "dropout";
  if (!Positive(m.norm_eps)) return "norm_eps";
  if (!Positive(m.rope_theta)) return "rope_theta";
  return m.name.empty() ? "name" : "";
}

std::string Layers(const ModelSpec& m) {
  if (m.layers.empty()) return "layers: empty";
  int64_t total = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const LayerGroup& g = m.layers[i];
    if (!In(g.repeat, 1, kLayers)) return "layers[].repeat";
    total += g.repeat;
    bool once = g.repeat == 1;
    if (g.kind == LayerKind::kEmbedding && !(i == 0 && once)) return "embedding not first";
    if (g.kind == LayerKind::kLmHead && !(i + 1 == m.layers.size() && once)) return "lm_head";
    if (g.kind == LayerKind::kLlamaBlock && (m.hidden / m.heads) % 2 != 0) return "odd head";
  }
  if (total > kLayers) return "more than 100000 layers";
  bool ends =
      m.layers.front().kind == LayerKind::kEmbedding && m.layers.back().kind == LayerKind::kLmHead;
  return m.tied_embeddings && !ends ? "tied_embeddings" : "";
}

std::string Devices(const ClusterSpec& c) {
  if (c.name.empty()) return "name";
  if (!In(c.nodes, 1, kDevices) || !In(c.devices_per_node, 1, kDevices)) return "node counts";
  if (int64_t{c.nodes} * c.devices_per_node > kDevices) return "nodes × devices_per_node";
  const DeviceSpec& d = c.device;
  if (d.name.empty()) return "device.name";
  if (!(Positive(d.memory_gib) && d.memory_gib <= 1048576)) return "device.memory_gib";
  if (!Positive(d.memory_bw_gb_per_s)) return "device.memory_bw_gb_per_s";
  if (d.peak_tflops.empty()) return "device.peak_tflops empty";
  for (const auto& [dtype, tflops] : d.peak_tflops) {
    if (!Positive(tflops)) return "device.peak_tflops";
  }
  return "";
}

// links.levels: distinct names, each unit a larger multiple of the one inside it, the
// outermost dividing the nodes.
std::string Levels(const ClusterSpec& c) {
  int64_t inner_nodes = 1;  // the nodes of one unit of the level inside
  std::set<std::string> names = {"intra_node", "inter_node"};
  for (const LinkLevel& level : c.levels) {
    if (level.name.empty() || !names.insert(level.name).second) return "levels[].name";
    if (level.nodes <= inner_nodes || level.nodes % inner_nodes != 0) return "levels[].nodes";
    if (!Positive(level.link.bw_gb_per_s) || !NonNegative(level.link.latency_us)) {
      return "levels[] link";
    }
    inner_nodes = level.nodes;
  }
  return c.nodes % inner_nodes == 0 ? "" : "levels do not divide nodes";
}

std::string Links(const ClusterSpec& c) {
  for (const LinkSpec& link : {c.intra_node, c.inter_node}) {
    if (!Positive(link.bw_gb_per_s) || !NonNegative(link.latency_us)) return "links";
  }
  if (std::string broken = Levels(c); !broken.empty()) return broken;
  const int64_t pod_nodes = c.levels.empty() ? c.nodes : c.levels.front().nodes;
  for (const MeasuredLink& m : c.measured) {
    int64_t most = m.link == LinkClass::kIntraNode ? c.devices_per_node : pod_nodes;
    if (!In(m.group_size, 2, std::max<int64_t>(2, most))) return "measured.group_size";
    if (!NonNegative(m.alpha_us) || !Positive(m.beta_gb_per_s)) return "measured alpha/beta";
  }
  return "";
}

std::string Entry(const ProfileEntry& e, int64_t seq_len) {
  if (!In(e.micro_batch, 1, kMicroBatch) || !In(e.tp, 1, kHeads)) return "micro_batch or tp";
  if (e.micro_batch * seq_len > kMicroBatchTokens) return "micro_batch × seq_len";
  for (double ms : {e.fwd_ms, e.bwd_input_ms, e.bwd_weight_ms, e.recompute_selective_ms,
                    e.recompute_full_ms, e.spread_pct}) {
    if (!NonNegative(ms)) return "times";
  }
  for (int64_t bytes :
       {e.param_bytes, e.grad_bytes, e.optimizer_bytes, e.output_bytes, e.stashed_none_bytes,
        e.stashed_selective_bytes, e.stashed_full_bytes, e.workspace_none_bytes,
        e.workspace_selective_bytes, e.workspace_full_bytes}) {
    if (!In(bytes, 0, int64_t{1} << 43)) return "bytes";
  }
  return "";
}

std::string ProfileHeader(const Profile& p) {
  if (p.model.empty()) return "model";
  if (!In(p.num_layers, 1, kLayers) || !In(p.seq_len, 1, 1048576)) return "num_layers/seq_len";
  if (!In(p.threads, 1, 65536)) return "threads";
  if (!In(p.method.warmup, 0, 1048576) || !In(p.method.repeats, 0, 1048576)) return "method";
  if (!(Finite(p.method.load_factor) && p.method.load_factor >= 1)) return "load_factor";
  return p.layers.empty() ? "layers empty" : "";
}

std::string PlanCounts(const Plan& p) {
  if (!In(p.devices, 1, kDevices) || !In(p.devices_per_node, 1, kDevices)) return "devices";
  if (!In(p.mesh.dp, 1, kDevices) || !In(p.mesh.pp, 1, kDevices)) return "mesh";
  if (!In(p.mesh.tp, 1, kHeads) || p.devices_per_node % p.mesh.tp != 0) return "mesh.tp";
  for (int64_t sharded : {p.model.heads, p.model.kv_heads, p.model.ffn_hidden}) {
    if (sharded % p.mesh.tp != 0) return "tp does not divide the model";
  }
  if (!In(p.micro_batch_size, 1, kMicroBatch) || !In(p.num_micro_batches, 1, 16384)) {
    return "batch";
  }
  if (p.global_batch != int64_t{p.micro_batch_size} * p.num_micro_batches) return "global";
  if (!In(p.seq_len, 1, p.model.max_seq_len)) return "seq_len";
  if (p.micro_batch_size * p.seq_len > kMicroBatchTokens) return "tokens per micro-batch";
  bool interleaved = p.schedule == ScheduleKind::kInterleaved1F1B;
  if (interleaved ? p.virtual_stages < 2 : p.virtual_stages != 1) return "virtual_stages";
  if (p.virtual_stages > kLayers) return "virtual_stages";
  return "";
}

std::string PlanStages(const Plan& p) {
  if (p.stages.size() != static_cast<size_t>(p.mesh.pp) * p.virtual_stages) return "stages";
  int64_t next = 0, devices = 0;
  int max_replicas = 0;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const PlanStage& s = p.stages[i];
    if (s.first_layer != next || !In(s.num_layers, 1, kLayers)) return "stage layers";
    next += s.num_layers;
    if (!In(s.replicas, 1, kDevices) || s.replicas != p.stages[i % p.mesh.pp].replicas) {
      return "replicas";
    }
    if (s.replicas > p.num_micro_batches) return "a micro-batch for every replica";
    if (i < static_cast<size_t>(p.mesh.pp)) devices += int64_t{s.replicas} * p.mesh.tp;
    max_replicas = std::max(max_replicas, s.replicas);
    if (!NonNegative(s.predicted_time_ms)) return "predicted_time_ms";
    if (!In(s.predicted_memory_bytes, 0, int64_t{1} << 60)) return "predicted_memory_bytes";
  }
  if (next != p.model.NumLayers()) return "stages cover the model";
  if (p.mesh.dp != max_replicas || devices != p.devices) return "dp / devices";
  return "";
}

std::string PlanSchedule(const Plan& p) {
  for (int pos = 0; pos < p.mesh.pp; ++pos) {
    const int r = p.stages[pos].replicas, m = p.num_micro_batches;
    if (p.schedule == ScheduleKind::kNaive && r != m) return "naive";
    const bool equal_lanes =
        p.schedule == ScheduleKind::kInterleaved1F1B || p.schedule == ScheduleKind::kPipeDream;
    if (equal_lanes && m % r != 0) return "replicas divide micro-batches";
    if (p.schedule == ScheduleKind::kInterleaved1F1B && (m / r) % p.mesh.pp != 0) {
      return "interleaved micro-batches";
    }
  }
  const PlanPrediction& q = p.predicted;
  if (!NonNegative(q.step_time_ms) || !NonNegative(q.tokens_per_s)) return "predicted";
  if (!(Finite(q.bubble_fraction) && q.bubble_fraction >= 0 && q.bubble_fraction <= 1)) {
    return "bubble_fraction";
  }
  return In(q.peak_memory_bytes, 0, int64_t{1} << 60) ? "" : "peak_memory_bytes";
}

}  // namespace

std::string BrokenConstraint(const ModelSpec& model) {
  std::string sizes = Sizes(model);
  return sizes.empty() ? Layers(model) : sizes;
}

std::string BrokenConstraint(const ClusterSpec& cluster) {
  std::string devices = Devices(cluster);
  return devices.empty() ? Links(cluster) : devices;
}

std::string BrokenConstraint(const Profile& p) {
  if (std::string header = ProfileHeader(p); !header.empty()) return header;
  int64_t next = 0;
  for (const LayerProfile& layer : p.layers) {
    if (layer.first_layer != next || !In(layer.num_layers, 1, kLayers)) return "layer order";
    next += layer.num_layers;
    if (layer.entries.empty()) return "entries empty";
    std::set<std::pair<int, int>> seen;
    for (const ProfileEntry& e : layer.entries) {
      if (std::string problem = Entry(e, p.seq_len); !problem.empty()) return problem;
      if (!seen.insert({e.micro_batch, e.tp}).second) return "duplicate entry";
    }
  }
  return next == p.num_layers ? "" : "layers cover num_layers";
}

std::string BrokenConstraint(const Plan& plan) {
  if (std::string model = BrokenConstraint(plan.model); !model.empty()) return "model." + model;
  std::string counts = PlanCounts(plan);
  if (!counts.empty()) return counts;
  std::string stages = PlanStages(plan);
  return stages.empty() ? PlanSchedule(plan) : stages;
}

std::string BrokenConstraint(const PublishedRuns& runs) {
  if (runs.name.empty() || runs.cluster.empty()) return "name or cluster empty";
  if (!In(runs.vocab_size, 0, 4194304)) return "vocab_size";
  if (runs.runs.empty()) return "no runs";
  std::set<std::string> names;
  for (const PublishedRun& run : runs.runs) {
    if (run.name.empty() || !names.insert(run.name).second) return "run names";
    if (!(run.step_s > 0) || !std::isfinite(run.step_s)) return "step_s";
    if (run.megatron.empty()) return "megatron empty";
  }
  return "";
}

}  // namespace trident::testing
