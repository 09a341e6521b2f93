#include "core/cluster.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "core/document.h"
#include "core/limits.h"
#include "core/yaml_io.h"

namespace trident {

const NameTable<DeviceKind>& DeviceKindNames() {
  static const NameTable<DeviceKind> kNames = {{"cpu", DeviceKind::kCpu},
                                               {"gpu", DeviceKind::kGpu}};
  return kNames;
}

const NameTable<LinkClass>& LinkClassNames() {
  static const NameTable<LinkClass> kNames = {{"intra_node", LinkClass::kIntraNode},
                                              {"inter_node", LinkClass::kInterNode}};
  return kNames;
}

const NameTable<Collective>& CollectiveNames() {
  static const NameTable<Collective> kNames = {{"p2p", Collective::kP2p},
                                               {"all_reduce", Collective::kAllReduce},
                                               {"all_gather", Collective::kAllGather},
                                               {"reduce_scatter", Collective::kReduceScatter}};
  return kNames;
}

int64_t ClusterSpec::DeviceMemoryBytes() const {
  return static_cast<int64_t>(std::llround(device.memory_gib * 1073741824.0));
}

int ClusterSpec::NodesPerUnit(int level) const {
  TRIDENT_CHECK(level >= 1 && level < NumLevels()) << "level " << level << " of " << NumLevels();
  return level - 1 < static_cast<int>(levels.size()) ? levels[level - 1].nodes : nodes;
}

int ClusterSpec::LevelSpanning(int64_t first_rank, int64_t last_rank) const {
  const int64_t first_node = std::min(first_rank, last_rank) / devices_per_node;
  const int64_t last_node = std::max(first_rank, last_rank) / devices_per_node;
  if (first_node == last_node) return 0;
  for (int level = 1; level + 1 < NumLevels(); ++level) {
    const int unit = NodesPerUnit(level);
    if (first_node / unit == last_node / unit) return level;
  }
  return NumLevels() - 1;
}

LinkSpec ClusterSpec::LinkOfLevel(int level) const {
  TRIDENT_CHECK(level >= 0 && level < NumLevels()) << "level " << level << " of " << NumLevels();
  if (level == 0) return intra_node;
  if (level == 1) return inter_node;
  return levels[level - 2].link;
}

std::string ClusterSpec::LevelName(int level) const {
  TRIDENT_CHECK(level >= 0 && level < NumLevels()) << "level " << level << " of " << NumLevels();
  if (level <= 1)
    return NameOf(LinkClassNames(), level == 0 ? LinkClass::kIntraNode : LinkClass::kInterNode);
  return levels[level - 2].name;
}

double DeviceEfficiency::GemmFraction(double gflop) const {
  TRIDENT_CHECK(!gemm.empty()) << "an empty GEMM efficiency curve";
  if (gflop <= gemm.front().gflop) return clock * gemm.front().fraction;
  for (size_t i = 1; i < gemm.size(); ++i) {
    const EfficiencyPoint& lo = gemm[i - 1];
    const EfficiencyPoint& hi = gemm[i];
    if (gflop > hi.gflop) continue;
    double t = std::log(gflop / lo.gflop) / std::log(hi.gflop / lo.gflop);
    return clock * (lo.fraction + t * (hi.fraction - lo.fraction));
  }
  return clock * gemm.back().fraction;
}

int64_t MemoryOverhead::ReservedBytes() const {
  return static_cast<int64_t>(
      std::llround((context_gib + communication_gib + workspace_gib) * 1073741824.0));
}

MemoryOverhead DeviceSpec::OverheadOrDefault() const {
  if (memory_overhead) return *memory_overhead;
  return kind == DeviceKind::kGpu ? kGpuDefaultOverhead : MemoryOverhead{};
}

double RingCollectiveMs(Collective collective, double bytes, int n, const LinkSpec& link,
                        int64_t calls) {
  if (n <= 1 || bytes <= 0 || calls <= 0) return 0;
  const double ranks = n;
  double steps = 1, volume = 1;  // p2p
  if (collective == Collective::kAllReduce) {
    steps = 2 * (ranks - 1);
    volume = 2 * (ranks - 1) / ranks;
  } else if (collective != Collective::kP2p) {
    steps = ranks - 1;
    volume = (ranks - 1) / ranks;
  }
  const double bytes_per_us = link.bw_gb_per_s * link.efficiency * 1e3;
  const double latency_us =
      (collective == Collective::kP2p ? 0 : link.collective_latency_us) + steps * link.latency_us;
  return (static_cast<double>(calls) * latency_us + volume * bytes / bytes_per_us) * 1e-3;
}

namespace {

constexpr double kMaxMemoryGib = 1 << 20;  // 1 PiB: far above any device, far below int64 bytes

// A fraction of a datasheet figure: in (0, 1].
FieldCheck CheckFraction(const std::string& path, double value, const std::string& what) {
  if (value > 0.0 && value <= 1.0) return std::nullopt;
  return FieldError{path, "must be in (0, 1], got " + FormatDouble(value), "give " + what};
}

FieldCheck CheckLink(const LinkSpec& link, const std::string& path) {
  if (link.bw_gb_per_s <= 0.0) {
    return FieldError{JoinKeyPath(path, "bw_gb_per_s"), "must be positive (GB/s)",
                      "give the bandwidth per device, one direction, e.g. 25 for a 200 Gb/s "
                      "adapter per device"};
  }
  if (link.latency_us < 0.0) {
    return FieldError{JoinKeyPath(path, "latency_us"), "must not be negative",
                      "give a small message's latency in microseconds, e.g. 5"};
  }
  if (link.collective_latency_us < 0.0) {
    return FieldError{JoinKeyPath(path, "collective_latency_us"), "must not be negative",
                      "give the fixed cost of one collective in microseconds, e.g. 8.4, or "
                      "leave the key out"};
  }
  return CheckFraction(JoinKeyPath(path, "efficiency"), link.efficiency,
                       "the bus bandwidth a large collective reaches over bw_gb_per_s, e.g. 0.8");
}

FieldCheck CheckGemmCurve(const std::vector<EfficiencyPoint>& curve) {
  const std::string path = "device.efficiency.gemm";
  if (curve.empty()) {
    return FieldError{path, "needs at least one point",
                      "add e.g. '- {gflop: 100, fraction: 0.85}', or leave device.efficiency out"};
  }
  for (size_t i = 0; i < curve.size(); ++i) {
    const std::string item = IndexKeyPath(path, i);
    if (!(curve[i].gflop > 0.0)) {
      return FieldError{JoinKeyPath(item, "gflop"), "must be positive (GFLOP of one product)", ""};
    }
    if (i > 0 && !(curve[i].gflop > curve[i - 1].gflop)) {
      return FieldError{JoinKeyPath(item, "gflop"),
                        "must be larger than the point before it (" +
                            FormatDouble(curve[i - 1].gflop) + "), got " +
                            FormatDouble(curve[i].gflop),
                        "list the points in ascending gflop, each size once"};
    }
    if (FieldCheck error = CheckFraction(JoinKeyPath(item, "fraction"), curve[i].fraction,
                                         "the fraction of peak_tflops at this size, e.g. 0.85")) {
      return error;
    }
  }
  return std::nullopt;
}

FieldCheck CheckOverhead(const std::optional<MemoryOverhead>& overhead) {
  if (!overhead) return std::nullopt;
  const std::string path = "device.memory_overhead";
  for (auto [key, gib] : {std::pair{"context_gib", overhead->context_gib},
                          std::pair{"communication_gib", overhead->communication_gib},
                          std::pair{"workspace_gib", overhead->workspace_gib}}) {
    if (!(gib >= 0.0 && gib <= kMaxMemoryGib)) {
      return FieldError{JoinKeyPath(path, key),
                        "must be in [0, 1048576] GiB, got " + FormatDouble(gib), ""};
    }
  }
  if (!(overhead->fragmentation >= 0.0 && overhead->fragmentation < 1.0)) {
    return FieldError{JoinKeyPath(path, "fragmentation"),
                      "must be in [0, 1), got " + FormatDouble(overhead->fragmentation),
                      "give the share of activation memory the allocator cannot reuse, e.g. 0.05"};
  }
  return std::nullopt;
}

FieldCheck CheckEfficiency(const DeviceEfficiency& efficiency) {
  if (FieldCheck error = CheckGemmCurve(efficiency.gemm)) return error;
  if (FieldCheck error = CheckFraction(
          "device.efficiency.clock", efficiency.clock,
          "the sustained clock under load over the clock peak_tflops is quoted at, e.g. 0.93")) {
    return error;
  }
  return CheckFraction("device.efficiency.memory", efficiency.memory,
                       "the fraction of memory_bw_gb_per_s memory-bound kernels reach, e.g. 0.85");
}

FieldCheck CheckDevice(const DeviceSpec& device) {
  if (device.name.empty()) return FieldError{"device.name", "must not be empty", ""};
  if (device.memory_gib <= 0.0 || device.memory_gib > kMaxMemoryGib) {
    return FieldError{"device.memory_gib",
                      "must be in (0, " + FormatDouble(kMaxMemoryGib) + "] GiB per device, got " +
                          FormatDouble(device.memory_gib),
                      ""};
  }
  if (device.peak_tflops.empty()) {
    return FieldError{"device.peak_tflops", "needs at least one dtype",
                      "add e.g. 'peak_tflops: {fp32: 19.5, bf16: 312}'"};
  }
  for (const auto& [dtype, tflops] : device.peak_tflops) {
    if (tflops <= 0.0) {
      return FieldError{"device.peak_tflops." + DTypeName(dtype), "must be positive", ""};
    }
  }
  if (device.memory_bw_gb_per_s <= 0.0) {
    return FieldError{"device.memory_bw_gb_per_s", "must be positive (GB/s)", ""};
  }
  if (FieldCheck error = CheckEfficiency(device.efficiency)) return error;
  return CheckOverhead(device.memory_overhead);
}

// An inter_node figure describes groups of nodes inside one unit of levels[0].
std::string MeasuredGroupHint(const ClusterSpec& c, LinkClass link) {
  if (link == LinkClass::kIntraNode || c.levels.empty()) return "";
  return "an inter_node group holds nodes of one '" + c.levels[0].name + "' (" +
         std::to_string(c.levels[0].nodes) + " nodes); figures between '" + c.levels[0].name +
         "' units cannot be given";
}

FieldCheck CheckLevelName(const ClusterSpec& c, size_t i) {
  const std::string path = JoinKeyPath(IndexKeyPath("links.levels", i), "name");
  const std::string& name = c.levels[i].name;
  if (name.empty())
    return FieldError{path, "must not be empty", "name the level, e.g. pod or rack"};
  if (name == "intra_node" || name == "inter_node") {
    return FieldError{path, "'" + name + "' names a link of every cluster (links." + name + ")",
                      "pick another name, e.g. pod or rack"};
  }
  for (size_t j = 0; j < i; ++j) {
    if (c.levels[j].name == name) {
      return FieldError{
          path,
          "duplicate level name '" + name + "' (also links.levels[" + std::to_string(j) + "].name)",
          "give each level its own name"};
    }
  }
  return std::nullopt;
}

// Each unit holds 2 or more units of the level inside it (a node for levels[0]).
FieldCheck CheckLevelNodes(const ClusterSpec& c, size_t i) {
  const std::string path = JoinKeyPath(IndexKeyPath("links.levels", i), "nodes");
  const int nodes = c.levels[i].nodes;
  if (i == 0) {
    if (nodes >= 2) return std::nullopt;
    return FieldError{path, "must be at least 2 (nodes per unit), got " + std::to_string(nodes),
                      "a unit of one node is the node itself; set nodes to e.g. 2"};
  }
  const LinkLevel& inner = c.levels[i - 1];
  if (nodes > inner.nodes && nodes % inner.nodes == 0) return std::nullopt;
  return FieldError{path,
                    "must be a multiple of " + std::to_string(inner.nodes) +
                        " (the nodes of one '" + inner.name + "') above it, got " +
                        std::to_string(nodes),
                    "a unit holds 2 or more whole units of the level inside it; set nodes to "
                    "e.g. " +
                        std::to_string(int64_t{2} * inner.nodes)};
}

// The outermost unit divides the cluster.
FieldCheck CheckLevelsDivideNodes(const ClusterSpec& c) {
  if (c.levels.empty() || c.nodes % c.levels.back().nodes == 0) return std::nullopt;
  const LinkLevel& outer = c.levels.back();
  return FieldError{JoinKeyPath(IndexKeyPath("links.levels", c.levels.size() - 1), "nodes"),
                    "units of " + std::to_string(outer.nodes) + " nodes ('" + outer.name +
                        "') do not divide the cluster's " + std::to_string(c.nodes) + " nodes",
                    "make nodes a multiple of " + std::to_string(outer.nodes) +
                        " or this level's nodes a divisor of " + std::to_string(c.nodes)};
}

FieldCheck CheckLevels(const ClusterSpec& c) {
  for (size_t i = 0; i < c.levels.size(); ++i) {
    if (FieldCheck error = CheckLevelName(c, i)) return error;
    if (FieldCheck error = CheckLevelNodes(c, i)) return error;
    if (FieldCheck error = CheckLink(c.levels[i].link, IndexKeyPath("links.levels", i))) {
      return error;
    }
  }
  return CheckLevelsDivideNodes(c);
}

FieldCheck CheckMeasured(const ClusterSpec& c) {
  for (size_t i = 0; i < c.measured.size(); ++i) {
    const MeasuredLink& m = c.measured[i];
    std::string path = IndexKeyPath("measured", i);
    int max_group = m.link == LinkClass::kIntraNode ? c.devices_per_node : c.NodesPerUnit(1);
    if (m.group_size < 2 || m.group_size > std::max(2, max_group)) {
      return FieldError{JoinKeyPath(path, "group_size"),
                        "must be between 2 and " + std::to_string(std::max(2, max_group)) +
                            ", got " + std::to_string(m.group_size),
                        MeasuredGroupHint(c, m.link)};
    }
    if (m.alpha_us < 0.0) {
      return FieldError{JoinKeyPath(path, "alpha_us"), "must not be negative", ""};
    }
    if (m.beta_gb_per_s <= 0.0) {
      return FieldError{JoinKeyPath(path, "beta_gb_per_s"), "must be positive (GB/s)", ""};
    }
  }
  return std::nullopt;
}

// nodes and devices_per_node at least 1, and together at most limits::kMaxDevices, so the
// device count fits in int.
FieldCheck CheckDeviceCounts(const ClusterSpec& c) {
  if (c.nodes < 1) return FieldError{"nodes", "must be at least 1", ""};
  if (c.devices_per_node < 1) return FieldError{"devices_per_node", "must be at least 1", ""};
  if (c.TotalDevices() > limits::kMaxDevices) {
    return FieldError{c.nodes >= c.devices_per_node ? "nodes" : "devices_per_node",
                      "nodes " + std::to_string(c.nodes) + " × devices_per_node " +
                          std::to_string(c.devices_per_node) + " = " +
                          std::to_string(c.TotalDevices()) + " devices, more than the limit " +
                          std::to_string(limits::kMaxDevices),
                      "Trident's limit for a cluster (core/README.md, Limits)"};
  }
  return std::nullopt;
}

}  // namespace

FieldCheck ClusterSpec::Check() const {
  if (name.empty()) return FieldError{"name", "must not be empty", "name the cluster"};
  if (FieldCheck error = CheckDeviceCounts(*this)) return error;
  if (FieldCheck error = CheckDevice(device)) return error;
  if (FieldCheck error = CheckLink(intra_node, "links.intra_node")) return error;
  if (FieldCheck error = CheckLink(inter_node, "links.inter_node")) return error;
  if (FieldCheck error = CheckLevels(*this)) return error;
  return CheckMeasured(*this);
}

std::string ClusterSpec::ToString() const {
  return name + ": " + std::to_string(nodes) + " x " + std::to_string(devices_per_node) + " " +
         device.name + " (" + FormatDouble(device.memory_gib) + " GiB), " +
         std::to_string(TotalDevices()) + " devices";
}

namespace {

// The keys of a link, in a links entry or a level.
Status ReadLinkFields(YamlMap& map, LinkSpec* link) {
  TRIDENT_RETURN_IF_ERROR(map.Get("bw_gb_per_s", &link->bw_gb_per_s));
  TRIDENT_RETURN_IF_ERROR(map.Get("latency_us", &link->latency_us));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("collective_latency_us", &link->collective_latency_us));
  return map.GetOptional("efficiency", &link->efficiency);
}

Status ReadLink(YamlMap& links, std::string_view key, LinkSpec* link) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, links.GetMap(key));
  TRIDENT_RETURN_IF_ERROR(ReadLinkFields(map, link));
  return map.Finish();
}

Status ReadGemmPoint(YamlMap& item, std::vector<EfficiencyPoint>* curve) {
  EfficiencyPoint point;
  TRIDENT_RETURN_IF_ERROR(item.Get("gflop", &point.gflop));
  TRIDENT_RETURN_IF_ERROR(item.Get("fraction", &point.fraction));
  curve->push_back(point);
  return Status::Ok();
}

Status ReadEfficiency(YamlMap& device, DeviceEfficiency* efficiency) {
  if (!device.Has("efficiency")) return Status::Ok();
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, device.GetMap("efficiency"));
  efficiency->gemm.clear();
  TRIDENT_RETURN_IF_ERROR(map.ForEachMap(
      "gemm", [efficiency](YamlMap& item, int) { return ReadGemmPoint(item, &efficiency->gemm); }));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("clock", &efficiency->clock));
  TRIDENT_RETURN_IF_ERROR(map.Get("memory", &efficiency->memory));
  return map.Finish();
}

Status ReadOverhead(YamlMap& device, std::optional<MemoryOverhead>* overhead) {
  if (!device.Has("memory_overhead")) return Status::Ok();
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, device.GetMap("memory_overhead"));
  MemoryOverhead o;
  TRIDENT_RETURN_IF_ERROR(map.Get("context_gib", &o.context_gib));
  TRIDENT_RETURN_IF_ERROR(map.Get("communication_gib", &o.communication_gib));
  TRIDENT_RETURN_IF_ERROR(map.Get("workspace_gib", &o.workspace_gib));
  TRIDENT_RETURN_IF_ERROR(map.Get("fragmentation", &o.fragmentation));
  *overhead = o;
  return map.Finish();
}

Status ReadDevice(YamlMap& top, DeviceSpec* device) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, top.GetMap("device"));
  TRIDENT_RETURN_IF_ERROR(map.Get("name", &device->name));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("kind", DeviceKindNames(), &device->kind));
  TRIDENT_RETURN_IF_ERROR(map.Get("memory_gib", &device->memory_gib));
  TRIDENT_RETURN_IF_ERROR(map.Get("memory_bw_gb_per_s", &device->memory_bw_gb_per_s));
  TRIDENT_ASSIGN_OR_RETURN(YamlMap peak, map.GetMap("peak_tflops"));
  for (const auto& [name, dtype] : DTypeNames()) {
    if (!peak.Has(name)) continue;
    TRIDENT_RETURN_IF_ERROR(peak.Get(name, &device->peak_tflops[dtype]));
  }
  TRIDENT_RETURN_IF_ERROR(peak.Finish());
  TRIDENT_RETURN_IF_ERROR(ReadEfficiency(map, &device->efficiency));
  TRIDENT_RETURN_IF_ERROR(ReadOverhead(map, &device->memory_overhead));
  return map.Finish();
}

Status ReadLevel(YamlMap& item, ClusterSpec* spec) {
  LinkLevel level;
  TRIDENT_RETURN_IF_ERROR(item.Get("name", &level.name));
  TRIDENT_RETURN_IF_ERROR(item.Get("nodes", &level.nodes));
  TRIDENT_RETURN_IF_ERROR(ReadLinkFields(item, &level.link));
  spec->levels.push_back(level);
  return Status::Ok();
}

Status ReadLinks(YamlMap& top, ClusterSpec* spec) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap links, top.GetMap("links"));
  TRIDENT_RETURN_IF_ERROR(ReadLink(links, "intra_node", &spec->intra_node));
  TRIDENT_RETURN_IF_ERROR(ReadLink(links, "inter_node", &spec->inter_node));
  if (links.Has("levels")) {
    TRIDENT_RETURN_IF_ERROR(
        links.ForEachMap("levels", [spec](YamlMap& item, int) { return ReadLevel(item, spec); }));
  }
  return links.Finish();
}

Status ReadMeasured(YamlMap& item, ClusterSpec* spec) {
  MeasuredLink m;
  TRIDENT_RETURN_IF_ERROR(item.GetEnum("collective", CollectiveNames(), &m.collective));
  TRIDENT_RETURN_IF_ERROR(item.GetEnum("link", LinkClassNames(), &m.link));
  TRIDENT_RETURN_IF_ERROR(item.Get("group_size", &m.group_size));
  TRIDENT_RETURN_IF_ERROR(item.Get("alpha_us", &m.alpha_us));
  TRIDENT_RETURN_IF_ERROR(item.Get("beta_gb_per_s", &m.beta_gb_per_s));
  spec->measured.push_back(m);
  return Status::Ok();
}

Status ReadCluster(YamlMap& map, ClusterSpec* spec) {
  TRIDENT_RETURN_IF_ERROR(map.Get("name", &spec->name));
  TRIDENT_RETURN_IF_ERROR(map.Get("nodes", &spec->nodes));
  TRIDENT_RETURN_IF_ERROR(map.Get("devices_per_node", &spec->devices_per_node));
  TRIDENT_RETURN_IF_ERROR(ReadDevice(map, &spec->device));
  TRIDENT_RETURN_IF_ERROR(ReadLinks(map, spec));
  if (!map.Has("measured")) return Status::Ok();
  return map.ForEachMap("measured",
                        [spec](YamlMap& item, int) { return ReadMeasured(item, spec); });
}

void WriteLinkFields(YamlWriter& out, const LinkSpec& link) {
  out.Field("bw_gb_per_s", link.bw_gb_per_s).Field("latency_us", link.latency_us);
  if (link.collective_latency_us > 0) {
    out.Field("collective_latency_us", link.collective_latency_us);
  }
  out.Field("efficiency", link.efficiency);
}

void WriteLink(YamlWriter& out, std::string_view key, const LinkSpec& link) {
  out.Key(key).BeginMap();
  WriteLinkFields(out, link);
  out.EndMap();
}

void WriteLinks(YamlWriter& out, const ClusterSpec& spec) {
  out.Key("links").BeginMap();
  WriteLink(out, "intra_node", spec.intra_node);
  WriteLink(out, "inter_node", spec.inter_node);
  if (!spec.levels.empty()) {
    out.Key("levels").BeginList();
    for (const LinkLevel& level : spec.levels) {
      out.BeginMap().Field("name", level.name).Field("nodes", level.nodes);
      WriteLinkFields(out, level.link);
      out.EndMap();
    }
    out.EndList();
  }
  out.EndMap();
}

void WriteDevice(YamlWriter& out, const DeviceSpec& device) {
  out.Key("device").BeginMap();
  out.Field("name", device.name)
      .Field("kind", NameOf(DeviceKindNames(), device.kind))
      .Field("memory_gib", device.memory_gib)
      .Field("memory_bw_gb_per_s", device.memory_bw_gb_per_s);
  out.Key("peak_tflops").BeginMap();
  for (const auto& [dtype, tflops] : device.peak_tflops) out.Field(DTypeName(dtype), tflops);
  out.EndMap();
  out.Key("efficiency").BeginMap();
  out.Key("gemm").BeginList();
  for (const EfficiencyPoint& p : device.efficiency.gemm) {
    out.BeginMap(/*flow=*/true).Field("gflop", p.gflop).Field("fraction", p.fraction).EndMap();
  }
  out.EndList();
  out.Field("clock", device.efficiency.clock).Field("memory", device.efficiency.memory);
  out.EndMap();
  if (device.memory_overhead) {
    const MemoryOverhead& o = *device.memory_overhead;
    out.Key("memory_overhead").BeginMap();
    out.Field("context_gib", o.context_gib)
        .Field("communication_gib", o.communication_gib)
        .Field("workspace_gib", o.workspace_gib)
        .Field("fragmentation", o.fragmentation);
    out.EndMap();
  }
  out.EndMap();
}

void WriteMeasured(YamlWriter& out, const std::vector<MeasuredLink>& measured) {
  if (measured.empty()) return;
  out.Key("measured").BeginList();
  for (const MeasuredLink& m : measured) {
    out.BeginMap()
        .Field("collective", NameOf(CollectiveNames(), m.collective))
        .Field("link", NameOf(LinkClassNames(), m.link))
        .Field("group_size", m.group_size)
        .Field("alpha_us", m.alpha_us)
        .Field("beta_gb_per_s", m.beta_gb_per_s)
        .EndMap();
  }
  out.EndList();
}

}  // namespace

StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text, const std::string& file) {
  return ParseDocument<ClusterSpec>(text, file, "cluster", ReadCluster);
}

StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path) {
  return LoadDocument<ClusterSpec>(path, "cluster", ReadCluster);
}

std::string ClusterSpecToYaml(const ClusterSpec& spec) {
  YamlWriter out;
  out.BeginMap();
  WriteDocumentHeader(out, "cluster", ClusterSpec::kFormatVersion);
  out.Field("name", spec.name)
      .Field("nodes", spec.nodes)
      .Field("devices_per_node", spec.devices_per_node);
  WriteDevice(out, spec.device);
  WriteLinks(out, spec);
  WriteMeasured(out, spec.measured);
  out.EndMap();
  return out.Text();
}

}  // namespace trident
