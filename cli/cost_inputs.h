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
#include "planner/report.h"

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

StatusOr<std::unique_ptr<CostInputs>> LoadCostInputs(const CostOptions& options,
                                                     const ModelSpec& model, int64_t seq_len,
                                                     DType dtype);

// Records digests of the profile (its costs, not its date) and the cluster in `plan`.
void RecordProvenance(const CostInputs& inputs, Plan* plan);

// --max-memory in GiB: 0 (the device's) or between 1 MiB and 1 PiB.
Status CheckMaxMemory(double gib);

// Model FLOPs of one training step (forward and backward, no recompute) and the device's
// dense peak, for "% of peak".
ReportContext MakeReportContext(const Plan& plan, const ClusterSpec& cluster);

}  // namespace trident
