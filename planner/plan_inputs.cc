#include "planner/plan_inputs.h"

#include "core/digest.h"
#include "core/text_format.h"
#include "models/model_cost.h"

namespace trident {

Status CheckProfileMatches(const Profile& profile, const std::string& profile_path,
                           const ModelSpec& model, int64_t seq_len, DType dtype) {
  if (profile.model != model.name || profile.num_layers != model.NumLayers()) {
    return InvalidArgument(profile_path + ": profiles " + profile.model + " (" +
                           std::to_string(profile.num_layers) + " layers), not " + model.name +
                           "; use a profile of this model, or leave out "
                           "--profile to plan analytically");
  }
  if (profile.seq_len != seq_len) {
    return InvalidArgument(profile_path + ": profiled at seq_len " +
                           std::to_string(profile.seq_len) + " but the plan uses " +
                           std::to_string(seq_len) + "; use a profile taken at --seq " +
                           std::to_string(seq_len) + ", or leave out --profile");
  }
  if (profile.dtype != dtype) {
    return InvalidArgument(profile_path + ": profiled in " + DTypeName(profile.dtype) +
                           " but the plan trains in " + DTypeName(dtype) + "; plan with --dtype " +
                           DTypeName(profile.dtype) + ", or leave out --profile");
  }
  return Status::Ok();
}

Status CheckSequenceLength(const ModelSpec& model, int64_t seq_len) {
  if (seq_len <= model.max_seq_len) return Status::Ok();
  return InvalidArgument("--seq " + std::to_string(seq_len) + " exceeds " + model.name +
                         "'s max_seq_len " + std::to_string(model.max_seq_len));
}

Status CheckMaxMemory(double gib) {
  if (gib == 0 || (gib >= 1.0 / 1024 && gib <= 1048576)) return Status::Ok();
  return InvalidArgument("--max-memory " + FormatFixed(gib, 12) +
                         " GiB: give between 1 MiB (0.001) and 1 PiB (1048576) per device");
}

int64_t MaxMemoryBytes(double gib) { return static_cast<int64_t>(gib * (1 << 30)); }

void RecordProvenance(const Profile& profile, const ClusterSpec& cluster, Plan* plan) {
  Profile costs_only = profile;
  costs_only.date.clear();
  costs_only.build.clear();
  plan->provenance.profile_digest = ContentDigest(ProfileToYaml(costs_only));
  plan->provenance.cluster_digest = ContentDigest(ClusterSpecToYaml(cluster));
}

ReportContext MakeReportContext(const Plan& plan, const ClusterSpec& cluster) {
  ReportContext context;
  LayerShape shape{plan.micro_batch_size, plan.seq_len, 1, plan.dtype, RecomputeMode::kNone};
  ModelCost cost = AnalyticModelCost(plan.model, shape);
  context.model_flops_per_step = cost.total.TotalFlops() * plan.num_micro_batches;
  auto peak = cluster.device.peak_tflops.find(plan.dtype);
  if (peak != cluster.device.peak_tflops.end()) context.peak_flops_per_device = peak->second * 1e12;
  return context;
}

}  // namespace trident
