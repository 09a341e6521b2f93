// Profile: what each layer costs on one device, per (micro-batch size, tp degree, sequence
// parallelism, cp degree), either measured by `trident profile` or computed analytically from a
// cluster description.
//
// Identical layers (the transformer blocks) share one entry: a LayerProfile covers the
// layer indices [first_layer, first_layer + num_layers). The entries of all LayerProfiles
// together cover every layer of the model exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/dtype.h"
#include "core/field_error.h"
#include "core/model_spec.h"
#include "core/names.h"
#include "core/recompute.h"
#include "core/status.h"

namespace trident {

// kImported: costs measured by another tool and converted (`trident import`).
enum class ProfileSource { kMeasured, kAnalytic, kImported };
const NameTable<ProfileSource>& ProfileSourceNames();

// Costs of one layer for one micro-batch size and tp degree, with or without sequence
// parallelism, at one context-parallel degree, as one rank of the tp and cp groups sees them
// (tp and cp collectives included in the times). Under cp > 1 the rank holds S/cp tokens of
// each of the micro_batch sequences (2 of their 2·cp chunks, models/layer_shapes.h).
struct ProfileEntry {
  int micro_batch = 1;
  int tp = 1;
  bool sequence_parallel = false;  // only with tp > 1 dividing seq_len / cp; written when true
  int cp = 1;                      // 2·cp divides seq_len; written only when > 1
  double fwd_ms = 0;
  double bwd_input_ms = 0;
  double bwd_weight_ms = 0;
  double recompute_selective_ms = 0;  // extra time before backward with selective recompute
  double recompute_full_ms = 0;       // extra time before backward with full recompute
  double spread_pct = 0;              // (p90 - p10) / median of the repeats, in percent
  int64_t param_bytes = 0;
  int64_t grad_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t output_bytes = 0;
  int64_t stashed_none_bytes = 0;
  int64_t stashed_selective_bytes = 0;
  int64_t stashed_full_bytes = 0;
  // The most one call of the layer allocates above what was alive at its start or end, per
  // recompute mode (a recomputing backward rebuilds what the forward dropped).
  int64_t workspace_none_bytes = 0;
  int64_t workspace_selective_bytes = 0;
  int64_t workspace_full_bytes = 0;

  int64_t StashedBytes(RecomputeMode mode) const;
  int64_t WorkspaceBytes(RecomputeMode mode) const;
  double RecomputeMs(RecomputeMode mode) const;  // 0 for kNone
  bool operator==(const ProfileEntry&) const = default;
};

struct LayerProfile {
  int first_layer = 0;
  int num_layers = 1;
  LayerKind kind = LayerKind::kGptBlock;
  std::vector<ProfileEntry> entries;
  bool operator==(const LayerProfile&) const = default;
};

struct ProfileMethod {
  ProfileSource source = ProfileSource::kMeasured;
  int warmup = 0;
  int repeats = 0;
  // How much slower than in its quietest pass the machine ran while the layers were measured
  // (profiler/README.md: the times are each figure's quietest pass; this is the median over
  // the entries of their pooled median F + B + W over their quietest pass's). Plans multiply
  // the layer times by it. >= 1: 1 for analytic profiles, about 1 for one-pass ones.
  double load_factor = 1;
  bool operator==(const ProfileMethod&) const = default;
};

struct Profile {
  static constexpr int kFormatVersion = 1;

  std::string model;   // the model's name
  int num_layers = 0;  // of the model, for the coverage check
  int64_t seq_len = 0;
  DType dtype = DType::kFp32;
  DeviceKind device_kind = DeviceKind::kCpu;
  std::string device;  // e.g. "AMD EPYC 7B13 (1 thread)" or "NVIDIA H100 80GB HBM3"
  int threads = 1;
  std::string build;  // Trident version and build type
  std::string date;   // ISO 8601, UTC
  ProfileMethod method;
  std::vector<LayerProfile> layers;

  bool operator==(const Profile&) const = default;

  // The entry of layer `index` for (micro_batch, tp, sequence_parallel, cp), or nullptr when
  // not profiled.
  const ProfileEntry* Find(int index, int micro_batch, int tp, bool sequence_parallel,
                           int cp) const;

  FieldCheck Check() const;
  Status Validate() const { return ToStatus(Check()); }
  std::string ToString() const;
};

StatusOr<Profile> ParseProfile(std::string_view text, const std::string& file);
StatusOr<Profile> LoadProfile(const std::string& path);
std::string ProfileToYaml(const Profile& profile);

}  // namespace trident
