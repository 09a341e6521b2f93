#include "cli/cost_inputs.h"

#include "core/digest.h"
#include "core/text_format.h"
#include "models/model_cost.h"
#include "profiler/analytic_profile.h"

namespace trident {

void AddCostOptions(CLI::App* cmd, CostOptions* options, bool cluster_required) {
  CLI::Option* cluster = cmd->add_option("--cluster", options->cluster,
                                         "Cluster file, e.g. configs/clusters/dgx-a100-80gb.yaml")
                             ->check(CLI::ExistingFile);
  if (cluster_required) cluster->required();
  cmd->add_option("--profile", options->profile,
                  "Profile file from 'trident profile' [default: analytic, from the cluster]")
      ->check(CLI::ExistingFile);
  cmd->add_option("--micro-batches", options->micro_batches,
                  "Micro-batch sizes of the analytic profile")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
}

StatusOr<std::unique_ptr<CostInputs>> LoadCostInputs(const CostOptions& options,
                                                     const ModelSpec& model, int64_t seq_len,
                                                     DType dtype) {
  auto inputs = std::make_unique<CostInputs>();
  TRIDENT_ASSIGN_OR_RETURN(inputs->cluster, LoadClusterSpec(options.cluster));
  if (options.profile.empty()) {
    AnalyticProfileOptions analytic{options.micro_batches, {}, seq_len, dtype};
    TRIDENT_ASSIGN_OR_RETURN(inputs->profile, AnalyticProfile(model, inputs->cluster, analytic));
  } else {
    TRIDENT_ASSIGN_OR_RETURN(inputs->profile, LoadProfile(options.profile));
    if (inputs->profile.model != model.name || inputs->profile.num_layers != model.NumLayers()) {
      return InvalidArgument(options.profile + ": profiles " + inputs->profile.model + " (" +
                             std::to_string(inputs->profile.num_layers) + " layers), not " +
                             model.name +
                             "; use a profile of this model, or leave out "
                             "--profile to plan analytically");
    }
    if (inputs->profile.seq_len != seq_len) {
      return InvalidArgument(options.profile + ": profiled at seq_len " +
                             std::to_string(inputs->profile.seq_len) + " but the plan uses " +
                             std::to_string(seq_len) + "; use a profile taken at --seq " +
                             std::to_string(seq_len) + ", or leave out --profile");
    }
  }
  inputs->costs = std::make_unique<ProfileCostModel>(inputs->profile, inputs->cluster);
  return inputs;
}

void RecordProvenance(const CostInputs& inputs, Plan* plan) {
  Profile costs_only = inputs.profile;
  costs_only.date.clear();
  costs_only.build.clear();
  plan->provenance.profile_digest = ContentDigest(ProfileToYaml(costs_only));
  plan->provenance.cluster_digest = ContentDigest(ClusterSpecToYaml(inputs.cluster));
}

Status CheckMaxMemory(double gib) {
  if (gib == 0 || (gib >= 1.0 / 1024 && gib <= 1048576)) return Status::Ok();
  return InvalidArgument("--max-memory " + FormatFixed(gib, 12) +
                         " GiB: give between 1 MiB (0.001) and 1 PiB (1048576) per device");
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
