#include "planner/cost_model.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace trident {
namespace {

using EntryKey = std::tuple<int, int, bool, int>;  // micro_batch, tp, sequence_parallel, cp

// Entry keys present in every layer of the profile.
std::set<EntryKey> CommonKeys(const Profile& profile) {
  std::set<EntryKey> common;
  bool first = true;
  for (const LayerProfile& layer : profile.layers) {
    std::set<EntryKey> keys;
    for (const ProfileEntry& e : layer.entries) {
      keys.insert({e.micro_batch, e.tp, e.sequence_parallel, e.cp});
    }
    if (first) {
      common = keys;
      first = false;
      continue;
    }
    std::set<EntryKey> both;
    std::set_intersection(common.begin(), common.end(), keys.begin(), keys.end(),
                          std::inserter(both, both.begin()));
    common = both;
  }
  return common;
}

void ScaleTimes(double factor, ProfileEntry& e) {
  for (double* ms : {&e.fwd_ms, &e.bwd_input_ms, &e.bwd_weight_ms, &e.recompute_selective_ms,
                     &e.recompute_full_ms}) {
    *ms *= factor;
  }
}

}  // namespace

ProfileCostModel::ProfileCostModel(const Profile& profile, const ClusterSpec& cluster)
    : profile_(profile), cluster_(cluster) {
  std::set<int> micro_batches, tps, cps;
  for (const auto& [mb, tp, sp, cp] : CommonKeys(profile)) {
    micro_batches.insert(mb);
    tps.insert(tp);
    cps.insert(cp);
  }
  micro_batches_.assign(micro_batches.begin(), micro_batches.end());
  tps_.assign(tps.begin(), tps.end());
  cps_.assign(cps.begin(), cps.end());
  layers_ = profile.layers;
  for (LayerProfile& layer : layers_) {
    for (ProfileEntry& e : layer.entries) ScaleTimes(profile.method.load_factor, e);
    for (int i = 0; i < layer.num_layers; ++i) layer_of_.push_back(&layer);
  }
}

const ProfileEntry* ProfileCostModel::Layer(int index, int micro_batch, int tp,
                                            bool sequence_parallel, int cp) const {
  if (index < 0 || index >= static_cast<int>(layer_of_.size())) return nullptr;
  for (const ProfileEntry& e : layer_of_[index]->entries) {
    if (e.micro_batch == micro_batch && e.tp == tp && e.sequence_parallel == sequence_parallel &&
        e.cp == cp) {
      return &e;
    }
  }
  return nullptr;
}

double ProfileCostModel::CollectiveMsAtLevel(Collective collective, double bytes, int group_size,
                                             int level) const {
  if (group_size <= 1 || bytes <= 0) return 0;
  const LinkSpec spec = cluster_.LinkOfLevel(level);
  for (const MeasuredLink& m : cluster_.measured) {
    int measured_level = m.link == LinkClass::kIntraNode ? 0 : 1;
    if (m.collective == collective && measured_level == level && m.group_size == group_size) {
      return (m.alpha_us + bytes / (m.beta_gb_per_s * 1e3)) * 1e-3;
    }
  }
  return RingCollectiveMs(collective, bytes, group_size, spec);
}

// The bytes an optimizer step's kernels move (OptimizerStepBytes) at the device's memory-bound
// efficiency. Example: AdamW over 1e9 bf16 parameters, 42 GB, on an A100 (2039 GB/s,
// efficiency 0.88): 42e9 / 1794e9 = 23.4 ms.
double ProfileCostModel::OptimizerMs(double bytes) const {
  const DeviceSpec& device = cluster_.device;
  return bytes / (device.memory_bw_gb_per_s * device.efficiency.memory * 1e6);
}

int64_t ProfileCostModel::ReservedBytes() const {
  return cluster_.device.OverheadOrDefault().ReservedBytes();
}

}  // namespace trident
