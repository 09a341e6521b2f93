// trident fidelity FILE...: each published run of each file (core/published_runs.h) imported
// from its Megatron-LM arguments, evaluated as `trident simulate` evaluates a plan (analytic
// profile from the cluster), and its predicted step time set beside the published one.
//
// error = (predicted − published) / published, signed: negative when the prediction is too
// fast. Per file: the mean and the max of |error| over its runs, each held to a bound when
// --max-mean-error or --max-error gives one.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

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
  std::string name;
  double published_s = 0;
  std::optional<Evaluation> evaluation;  // absent: `failure` says why
  std::string failure;
  double error_pct = 0;
};

struct FileReport {
  std::string file;
  PublishedRuns runs;
  std::vector<RunRow> rows;
  std::string failure;  // the file did not load
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  std::string worst_run;  // the run of the max, and its signed error
  double worst_error_pct = 0;
  std::vector<std::string> problems;  // bounds exceeded, runs not evaluated
};

double Seconds(double ms) { return ms / 1000; }

RunRow EvaluateRun(const std::string& file, const PublishedRun& run, Plan plan,
                   const CostOptions& cost) {
  RunRow row{run.name, run.step_s, std::nullopt, "", 0};
  const std::string source = file + ": run '" + run.name + "'";
  StatusOr<EvaluatedPlan> ev = Evaluate(std::move(plan), source, cost, /*max_memory_gib=*/0);
  if (!ev.ok()) {
    const std::string& message = ev.status().message();
    row.failure = message.rfind(source, 0) == 0 ? message : source + ": " + message;
    return row;
  }
  row.error_pct = 100 * (Seconds(ev->evaluation.step_ms) - run.step_s) / run.step_s;
  row.evaluation = std::move(ev->evaluation);
  return row;
}

void Summarize(FileReport* f) {
  int evaluated = 0;
  for (const RunRow& row : f->rows) {
    if (!row.evaluation) {
      f->problems.push_back(row.failure);
      continue;
    }
    ++evaluated;
    f->mean_abs_error_pct += std::abs(row.error_pct);
    if (std::abs(row.error_pct) >= f->max_abs_error_pct) {
      f->max_abs_error_pct = std::abs(row.error_pct);
      f->worst_run = row.name;
      f->worst_error_pct = row.error_pct;
    }
  }
  if (evaluated > 0) f->mean_abs_error_pct /= evaluated;
}

std::string Pct(double value) { return FormatFixed(value, 1) + "%"; }
std::string SignedPct(double value) { return (value > 0 ? "+" : "") + Pct(value); }
std::string Points(double value) { return FormatFixed(value, 1) + " points"; }

void CheckBounds(const FidelityOptions& o, FileReport* f) {
  if (o.max_mean_error_pct && f->mean_abs_error_pct > *o.max_mean_error_pct) {
    f->problems.push_back(f->file + ": mean |error| " + Pct(f->mean_abs_error_pct) +
                          " exceeds --max-mean-error " + Pct(*o.max_mean_error_pct) + " by " +
                          Points(f->mean_abs_error_pct - *o.max_mean_error_pct));
  }
  if (o.max_error_pct && f->max_abs_error_pct > *o.max_error_pct) {
    const auto beyond = std::count_if(f->rows.begin(), f->rows.end(), [&](const RunRow& r) {
      return r.evaluation && std::abs(r.error_pct) > *o.max_error_pct;
    });
    f->problems.push_back(
        f->file + ": run '" + f->worst_run + "' is off by " + SignedPct(f->worst_error_pct) +
        ", beyond --max-error " + Pct(*o.max_error_pct) + " by " +
        Points(f->max_abs_error_pct - *o.max_error_pct) + " (" + std::to_string(beyond) + " of " +
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
  Summarize(&f);
  CheckBounds(o, &f);
  return f;
}

std::vector<std::string> RowCells(const RunRow& row) {
  std::vector<std::string> cells = {row.name, FormatFixed(row.published_s, 2)};
  if (!row.evaluation) {
    cells.insert(cells.end(), {"-", "failed", "", "", "", "", "", ""});
    return cells;
  }
  const Evaluation& e = *row.evaluation;
  cells.insert(cells.end(),
               {FormatFixed(Seconds(e.step_ms), 2), SignedPct(row.error_pct),
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
  for (const RunRow& row : f.rows) table.AddRow(RowCells(row));
  text += table.ToString() + "\n";
  if (f.worst_run.empty()) return text + "no run was predicted\n";
  return text + "mean |error| " + Pct(f.mean_abs_error_pct) + ", max |error| " +
         Pct(f.max_abs_error_pct) + " (" + f.worst_run + ", " + SignedPct(f.worst_error_pct) +
         ")\n";
}

nlohmann::json RunJson(const RunRow& row) {
  nlohmann::json j = {{"name", row.name}, {"published_s", row.published_s}};
  if (!row.evaluation) {
    j["error"] = row.failure;
    return j;
  }
  const Evaluation& e = *row.evaluation;
  j.update({{"predicted_s", Seconds(e.step_ms)},
            {"error_pct", row.error_pct},
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
  nlohmann::json rows = nlohmann::json::array();
  for (const RunRow& row : f.rows) rows.push_back(RunJson(row));
  return {{"file", f.file},
          {"name", f.runs.name},
          {"source", f.runs.source},
          {"cluster", f.runs.cluster},
          {"runs", rows},
          {"mean_abs_error_pct", f.mean_abs_error_pct},
          {"max_abs_error_pct", f.max_abs_error_pct},
          {"worst_run", f.worst_run},
          {"worst_error_pct", f.worst_error_pct},
          {"ok", f.problems.empty()},
          {"problems", f.problems}};
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
