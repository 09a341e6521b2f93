// The options and loading shared by the commands that need a cost model (plan, simulate,
// explain): a cluster file, and a profile file or an analytic profile computed from the
// cluster's hardware description.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/profile.h"
#include "planner/cost_model.h"

namespace trident {

struct CostOptions {
  std::string cluster;                            // path
  std::string profile;                            // path; empty: analytic
  std::vector<int> micro_batches = {1, 2, 4, 8};  // analytic profile sizes
};

void AddCostOptions(CLI::App* cmd, CostOptions* options, bool cluster_required);

// Everything a cost model refers to, kept alive together (the model keeps references).
struct CostInputs {
  ClusterSpec cluster;
  Profile profile;
  std::unique_ptr<ProfileCostModel> costs;
};

// The cluster, and the profile file or else an analytic profile of `model` (its default cp
// degrees and `cp`, the one a plan or --fix asks for); a profile file must match the model and
// `seq_len` (planner/plan_inputs.h).
StatusOr<std::unique_ptr<CostInputs>> LoadCostInputs(const CostOptions& options,
                                                     const ModelSpec& model, int64_t seq_len,
                                                     DType dtype, int cp);

}  // namespace trident
