#include "cli/cost_inputs.h"

#include <algorithm>

#include "planner/plan_inputs.h"
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
                                                     DType dtype, int cp) {
  auto inputs = std::make_unique<CostInputs>();
  TRIDENT_ASSIGN_OR_RETURN(inputs->cluster, LoadClusterSpec(options.cluster));
  if (options.profile.empty()) {
    std::vector<int> cps = DefaultContextDegrees(seq_len);
    if (std::find(cps.begin(), cps.end(), cp) == cps.end()) cps.push_back(cp);
    AnalyticProfileOptions analytic{options.micro_batches, {}, seq_len, dtype, cps};
    TRIDENT_ASSIGN_OR_RETURN(inputs->profile, AnalyticProfile(model, inputs->cluster, analytic));
  } else {
    TRIDENT_ASSIGN_OR_RETURN(inputs->profile, LoadProfile(options.profile));
    TRIDENT_RETURN_IF_ERROR(
        CheckProfileMatches(inputs->profile, options.profile, model, seq_len, dtype));
  }
  inputs->costs = std::make_unique<ProfileCostModel>(inputs->profile, inputs->cluster);
  return inputs;
}

}  // namespace trident
