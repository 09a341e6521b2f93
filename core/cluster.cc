#include "core/cluster.h"

#include <cmath>

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

namespace {

constexpr double kMaxMemoryGib = 1 << 20;  // 1 PiB: far above any device, far below int64 bytes

FieldCheck CheckLink(const LinkSpec& link, const std::string& path) {
  if (link.bw_gb_per_s <= 0.0) {
    return FieldError{JoinKeyPath(path, "bw_gb_per_s"), "must be positive (GB/s)", ""};
  }
  if (link.latency_us < 0.0) {
    return FieldError{JoinKeyPath(path, "latency_us"), "must not be negative", ""};
  }
  return std::nullopt;
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
  return std::nullopt;
}

FieldCheck CheckMeasured(const ClusterSpec& c) {
  for (size_t i = 0; i < c.measured.size(); ++i) {
    const MeasuredLink& m = c.measured[i];
    std::string path = IndexKeyPath("measured", i);
    int max_group = m.link == LinkClass::kIntraNode ? c.devices_per_node : c.nodes;
    if (m.group_size < 2 || m.group_size > std::max(2, max_group)) {
      return FieldError{JoinKeyPath(path, "group_size"),
                        "must be between 2 and " + std::to_string(std::max(2, max_group)) +
                            ", got " + std::to_string(m.group_size),
                        ""};
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
  return CheckMeasured(*this);
}

std::string ClusterSpec::ToString() const {
  return name + ": " + std::to_string(nodes) + " x " + std::to_string(devices_per_node) + " " +
         device.name + " (" + FormatDouble(device.memory_gib) + " GiB), " +
         std::to_string(TotalDevices()) + " devices";
}

namespace {

Status ReadLink(YamlMap& links, std::string_view key, LinkSpec* link) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, links.GetMap(key));
  TRIDENT_RETURN_IF_ERROR(map.Get("bw_gb_per_s", &link->bw_gb_per_s));
  TRIDENT_RETURN_IF_ERROR(map.Get("latency_us", &link->latency_us));
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
  return map.Finish();
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
  TRIDENT_ASSIGN_OR_RETURN(YamlMap links, map.GetMap("links"));
  TRIDENT_RETURN_IF_ERROR(ReadLink(links, "intra_node", &spec->intra_node));
  TRIDENT_RETURN_IF_ERROR(ReadLink(links, "inter_node", &spec->inter_node));
  TRIDENT_RETURN_IF_ERROR(links.Finish());
  if (!map.Has("measured")) return Status::Ok();
  return map.ForEachMap("measured",
                        [spec](YamlMap& item, int) { return ReadMeasured(item, spec); });
}

void WriteLink(YamlWriter& out, std::string_view key, const LinkSpec& link) {
  out.Key(key).BeginMap();
  out.Field("bw_gb_per_s", link.bw_gb_per_s).Field("latency_us", link.latency_us);
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
  out.EndMap().EndMap();
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
  out.Key("links").BeginMap();
  WriteLink(out, "intra_node", spec.intra_node);
  WriteLink(out, "inter_node", spec.inter_node);
  out.EndMap();
  WriteMeasured(out, spec.measured);
  out.EndMap();
  return out.Text();
}

}  // namespace trident
