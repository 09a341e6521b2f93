// trident fidelity FILE...: each published run of each file (core/published_runs.h) imported
// from its Megatron-LM arguments, evaluated as `trident simulate` evaluates a plan (analytic
// profile from the cluster) with Megatron-LM's blocking pipeline transfers
// (PipelineTransfers::kMegatronBlocking), and its predicted step time set beside the published
// one.
//
// The errors, their mean and max: core/published_runs.h's CompareStepTimes. Each file's mean and
// max |error| are held to --max-mean-error and --max-error when given.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/evaluated_plan.h"
#include "cli/format.h"
#include "launcher/published_plans.h"

namespace trident {
namespace {

struct FidelityOptions {
  std::vector<std::string> files;
  CostOptions cost;
  std::optional<double> max_mean_error_pct;
  std::optional<double> max_error_pct;
  bool json = false;
};

struct RunRow {
  std::optional<Evaluation> evaluation;  // absent: `failure` says why
  std::string failure;
};

struct FileReport {
  std::string file;
  PublishedRuns runs;
  std::vector<RunRow> rows;  // rows[i] is runs.runs[i]
  StepErrors errors;
  std::string failure;                // the file did not load
  std::vector<std::string> problems;  // bounds exceeded, runs not evaluated
};

double Seconds(double ms) { return ms / 1000; }

RunRow EvaluateRun(const std::string& file, const PublishedRun& run, Plan plan,
                   const CostOptions& cost) {
  RunRow row;
  const std::string source = file + ": run '" + run.name + "'";
  // The runs ran Megatron-LM, whose pipeline transfers block (planner/evaluate.h).
  StatusOr<EvaluatedPlan> ev = Evaluate(std::move(plan), source, cost, /*max_memory_gib=*/0,
                                        PipelineTransfers::kMegatronBlocking);
  if (!ev.ok()) {
    const std::string& message = ev.status().message();
    row.failure = message.rfind(source, 0) == 0 ? message : source + ": " + message;
    return row;
  }
  row.evaluation = std::move(ev->evaluation);
  return row;
}

void Compare(FileReport* f) {
  std::vector<std::optional<double>> predicted_s;
  for (const RunRow& row : f->rows) {
    if (!row.evaluation) f->problems.push_back(row.failure);
    predicted_s.push_back(row.evaluation ? std::optional(Seconds(row.evaluation->step_ms))
                                         : std::nullopt);
  }
  f->errors = CompareStepTimes(f->runs, predicted_s);
}

std::string Pct(double value) { return FormatFixed(value, 1) + "%"; }
std::string SignedPct(double value) { return (value > 0 ? "+" : "") + Pct(value); }
std::string Points(double value) { return FormatFixed(value, 1) + " points"; }

std::string WorstRun(const FileReport& f) { return f.runs.runs[f.errors.worst].name; }
double WorstError(const FileReport& f) { return *f.errors.error_pct[f.errors.worst]; }

void CheckBounds(const FidelityOptions& o, FileReport* f) {
  const StepErrors& e = f->errors;
  if (o.max_mean_error_pct && e.mean_abs_pct > *o.max_mean_error_pct) {
    f->problems.push_back(f->file + ": mean |error| " + Pct(e.mean_abs_pct) +
                          " exceeds --max-mean-error " + Pct(*o.max_mean_error_pct) + " by " +
                          Points(e.mean_abs_pct - *o.max_mean_error_pct));
  }
  if (o.max_error_pct && e.max_abs_pct > *o.max_error_pct) {
    f->problems.push_back(f->file + ": run '" + WorstRun(*f) + "' is off by " +
                          SignedPct(WorstError(*f)) + ", beyond --max-error " +
                          Pct(*o.max_error_pct) + " by " +
                          Points(e.max_abs_pct - *o.max_error_pct) + " (" +
                          std::to_string(e.CountBeyond(*o.max_error_pct)) + " of " +
                          std::to_string(f->rows.size()) + " runs beyond it)");
  }
}

FileReport EvaluateFile(const std::string& file, const FidelityOptions& o) {
  FileReport f;
  f.file = file;
  StatusOr<PublishedPlans> plans = LoadPublishedPlans(file);
  if (!plans.ok()) {
    f.failure = plans.status().message();
    f.problems.push_back(f.failure);
    return f;
  }
  f.runs = plans->file;
  for (size_t i = 0; i < f.runs.runs.size(); ++i) {
    f.rows.push_back(EvaluateRun(file, f.runs.runs[i], std::move(plans->plans[i]), o.cost));
  }
  Compare(&f);
  CheckBounds(o, &f);
  return f;
}

std::vector<std::string> RowCells(const FileReport& f, size_t i) {
  std::vector<std::string> cells = {f.runs.runs[i].name, FormatFixed(f.runs.runs[i].step_s, 2)};
  if (!f.rows[i].evaluation) {
    cells.insert(cells.end(), {"-", "failed", "", "", "", "", "", ""});
    return cells;
  }
  const Evaluation& e = *f.rows[i].evaluation;
  cells.insert(cells.end(),
               {FormatFixed(Seconds(e.step_ms), 2), SignedPct(*f.errors.error_pct[i]),
                FormatFixed(Seconds(e.busy_ms), 2), FormatFixed(Seconds(e.bubble_ms), 2),
                FormatFixed(Seconds(e.exposed_sync_ms), 3), FormatFixed(Seconds(e.optimizer_ms), 3),
                FormatBytes(static_cast<double>(e.peak_memory_bytes)), e.Fits() ? "yes" : "no"});
  return cells;
}

std::string FileText(const FileReport& f) {
  std::string text = f.runs.name + " (" + f.file + ") on " + f.runs.cluster + "\n";
  text += "source: " + f.runs.source + "\n\n";
  TextTable table({"run", "published s", "predicted s", "error", "compute s", "bubble s",
                   "exposed sync s", "optimizer s", "peak memory", "fits"});
  for (size_t i = 0; i < f.rows.size(); ++i) table.AddRow(RowCells(f, i));
  text += table.ToString() + "\n";
  if (f.errors.worst < 0) return text + "no run was predicted\n";
  return text + "mean |error| " + Pct(f.errors.mean_abs_pct) + ", max |error| " +
         Pct(f.errors.max_abs_pct) + " (" + WorstRun(f) + ", " + SignedPct(WorstError(f)) + ")\n";
}

nlohmann::json RunJson(const FileReport& f, size_t i) {
  nlohmann::json j = {{"name", f.runs.runs[i].name}, {"published_s", f.runs.runs[i].step_s}};
  if (!f.rows[i].evaluation) {
    j["error"] = f.rows[i].failure;
    return j;
  }
  const Evaluation& e = *f.rows[i].evaluation;
  j.update({{"predicted_s", Seconds(e.step_ms)},
            {"error_pct", *f.errors.error_pct[i]},
            {"compute_s", Seconds(e.busy_ms)},
            {"bubble_s", Seconds(e.bubble_ms)},
            {"exposed_sync_s", Seconds(e.exposed_sync_ms)},
            {"optimizer_s", Seconds(e.optimizer_ms)},
            {"peak_memory_bytes", e.peak_memory_bytes},
            {"memory_limit_bytes", e.memory_limit_bytes},
            {"fits", e.Fits()}});
  return j;
}

nlohmann::json FileJson(const FileReport& f) {
  nlohmann::json runs = nlohmann::json::array();
  for (size_t i = 0; i < f.rows.size(); ++i) runs.push_back(RunJson(f, i));
  nlohmann::json j = {{"file", f.file},
                      {"name", f.runs.name},
                      {"source", f.runs.source},
                      {"cluster", f.runs.cluster},
                      {"runs", runs},
                      {"mean_abs_error_pct", f.errors.mean_abs_pct},
                      {"max_abs_error_pct", f.errors.max_abs_pct},
                      {"ok", f.problems.empty()},
                      {"problems", f.problems}};
  if (f.errors.worst >= 0)
    j.update({{"worst_run", WorstRun(f)}, {"worst_error_pct", WorstError(f)}});
  return j;
}

int RunFidelity(const FidelityOptions& o) {
  nlohmann::json report = nlohmann::json::array();
  int failures = 0;
  for (const std::string& file : o.files) {
    const FileReport f = EvaluateFile(file, o);
    if (o.json) report.push_back(FileJson(f));
    if (!o.json && f.failure.empty()) std::cout << FileText(f) << "\n";
    for (const std::string& problem : f.problems) std::cerr << "error: " << problem << "\n";
    failures += f.problems.empty() ? 0 : 1;
  }
  if (o.json) std::cout << JsonText(report);
  return failures == 0 ? 0 : 1;
}

}  // namespace

void AddFidelityCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FidelityOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fidelity", "Predict published training runs and compare with their published step times");
  cmd->add_option("files", o->files, "published_runs files, e.g. configs/published/*.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--cluster", o->cost.cluster,
                  "Cluster file [default: configs/clusters/<the file's cluster>.yaml]")
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-mean-error", o->max_mean_error_pct,
                  "Fail when a file's mean |error| exceeds this, percent")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-error", o->max_error_pct,
                  "Fail when any run's |error| exceeds this, percent")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "Print the comparison as JSON");
  cmd->footer(
      "error = (predicted - published) / published. Exit status: 0 when every run was predicted "
      "within the bounds, 1 when a bound is exceeded or a run cannot be imported or evaluated, 2 "
      "on usage errors.");
  cmd->callback([o, exit_code] { *exit_code = RunFidelity(*o); });
}

}  // namespace trident
