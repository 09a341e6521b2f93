// A published_runs file: training runs whose step time a paper or report published, each given
// as the Megatron-LM arguments it ran with, for `trident fidelity` to predict and compare.
//
//   format_version: 1
//   kind: published_runs
//   name: korthikanti-2022-table5
//   source: Korthikanti et al. 2022, ..., Table 5
//   cluster: dgx-a100-80gb   # a cluster's name: configs/clusters/<name>.yaml
//   vocab_size: 51200        # optional; 0 or absent: each run's --vocab-size
//   runs:
//     - name: 22B, full recompute
//       step_s: 1.42         # the published time of one training step (iteration), seconds
//       megatron: --nnodes 1 --nproc-per-node 8 --num-layers 48 ...
//
// Reading is strict (core/document.h): unknown keys, a missing key, a step_s that is not
// positive and two runs of one name are errors at file:line:column.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_error.h"
#include "core/status.h"

namespace trident {

struct PublishedRun {
  std::string name;
  double step_s = 0;
  std::string megatron;  // Megatron-LM's arguments, as launcher/megatron_import.h reads them

  bool operator==(const PublishedRun&) const = default;
};

struct PublishedRuns {
  static constexpr int kFormatVersion = 1;

  std::string name;
  std::string source;   // the publication and the table or figure the runs come from
  std::string cluster;  // a cluster's name
  int64_t vocab_size = 0;
  std::vector<PublishedRun> runs;

  bool operator==(const PublishedRuns&) const = default;

  FieldCheck Check() const;
  Status Validate() const { return ToStatus(Check()); }
  std::string ToString() const;
};

// A check of one run as it is read, given the file's other keys (`file.runs` holds the runs
// before it); a failure is reported at the run's `megatron` key, with the file's line.
using PublishedRunCheck = std::function<Status(const PublishedRuns& file, const PublishedRun& run)>;

// `check` may be empty: the file's own rules only.
StatusOr<PublishedRuns> ParsePublishedRuns(std::string_view text, const std::string& file,
                                           const PublishedRunCheck& check = {});
StatusOr<PublishedRuns> LoadPublishedRuns(const std::string& path,
                                          const PublishedRunCheck& check = {});
// The file's text, which ParsePublishedRuns reads back to `runs`.
std::string PublishedRunsToYaml(const PublishedRuns& runs);

// Predicted against published step times: error_pct[i] = 100 · (predicted_i − published_i) /
// published_i, signed, so negative is a prediction too fast (published 1.42 s, predicted
// 1.27 s: −10.6%); the mean and the max of |error| over the runs predicted.
struct StepErrors {
  std::vector<std::optional<double>> error_pct;  // per run; nullopt: not predicted
  double mean_abs_pct = 0;                       // 0 when no run was predicted
  double max_abs_pct = 0;
  int worst = -1;  // the first run of the max; -1 when no run was predicted

  // The runs predicted with |error| above `bound_pct`.
  int CountBeyond(double bound_pct) const;
};

// REQUIRES: predicted_s has one entry per run of `runs` (nullopt: not predicted).
StepErrors CompareStepTimes(const PublishedRuns& runs,
                            const std::vector<std::optional<double>>& predicted_s);

}  // namespace trident
