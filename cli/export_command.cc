// trident export PLAN --to megatron|torchtitan [-o FILE] | --to deepspeed -o DIR: the plan as
// another framework's launch (launcher/megatron_export.h, torchtitan_export.h,
// deepspeed_export.h), or, exit 1 with nothing written, each of the plan's choices the
// framework cannot express, with the fix.
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/cost_inputs.h"
#include "cli/format.h"
#include "core/file_util.h"
#include "launcher/deepspeed_export.h"
#include "launcher/megatron_export.h"
#include "launcher/placement.h"
#include "launcher/torchtitan_export.h"
#include "planner/baseline.h"
#include "planner/plan_inputs.h"
#include "planner/report.h"
#include "planner/search.h"

namespace trident {
namespace {

struct ExportOptions {
  std::string plan;
  std::string to;
  std::string output;  // "": stdout
  bool allow_approximate = false;
  CostOptions cost;  // for --allow-approximate's search
};

// "PLAN: Megatron-LM ... cannot express 2 choices of this plan" and `consequence`, then one
// line per choice.
std::string Inexpressible(const std::string& plan_path, std::string_view framework,
                          const std::vector<FieldError>& choices, const std::string& consequence) {
  std::string message = plan_path + ": " + std::string(framework) + " cannot express " +
                        std::to_string(choices.size()) +
                        (choices.size() == 1 ? " choice" : " choices") + " of this plan; " +
                        consequence + ":";
  for (const FieldError& e : choices) message += "\n  " + FormatFieldError(e);
  return message;
}

Status WriteScript(const std::string& path, const std::string& script) {
  TRIDENT_RETURN_IF_ERROR(WriteFileAtomic(path, script));
  std::error_code ec;
  std::filesystem::permissions(path, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add, ec);
  return Status::Ok();
}

// The fastest plan of `plan`'s job within the framework's choices (ReplanRequests), on the
// cost options' cluster; the first search's error when none finds one.
StatusOr<Candidate> Replan(const ExportOptions& o, const Plan& plan, Framework framework) {
  if (o.cost.cluster.empty()) {
    return InvalidArgument(
        "--allow-approximate re-plans the job: give --cluster FILE (and "
        "--profile FILE for measured costs)");
  }
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<CostInputs> inputs,
                           LoadCostInputs(o.cost, FrameworkModel(plan.model, framework),
                                          plan.seq_len, plan.dtype, plan.mesh.cp));
  std::optional<Candidate> best;
  Status first_error = Status::Ok();
  for (SearchRequest& request : ReplanRequests(plan, framework)) {
    request.cluster_name = inputs->cluster.name;
    StatusOr<SearchResult> result = SearchPlans(*inputs->costs, request);
    if (!result.ok()) {
      if (first_error.ok()) first_error = result.status();
      continue;
    }
    Candidate& c = result->ranked.front();
    if (!best || c.evaluation.step_ms < best->evaluation.step_ms) best = std::move(c);
  }
  if (!best) return first_error;
  RecordProvenance(inputs->profile, inputs->cluster, &best->plan);
  return *std::move(best);
}

// Re-plans `plan` within `name`'s choices, saying why and both predicted steps on stderr.
StatusOr<Plan> ApproximatePlan(const ExportOptions& o, const Plan& plan, Framework framework,
                               std::string_view name,
                               const std::vector<FieldError>& inexpressible) {
  StatusOr<Candidate> found = Replan(o, plan, framework);
  if (!found.ok()) {
    return found.status().WithPrefix(o.plan + ": re-planning within " + std::string(name) +
                                     "'s choices");
  }
  Candidate& replanned = *found;
  std::cerr << "note: "
            << Inexpressible(o.plan, name, inexpressible, "re-planning the job within its choices")
            << "\nre-planned within " << name
            << "'s choices: " << FormatMs(plan.predicted.step_time_ms) << " a step as planned, "
            << FormatMs(replanned.evaluation.step_ms) << " re-planned ("
            << ConfigLine(replanned.plan) << ")\n";
  return std::move(replanned.plan);
}

// ds_config.json, pipeline.json and launch.sh in `dir`, each written atomically after all
// are made.
Status WriteDeepSpeed(const std::string& dir, const DeepSpeedExport& out) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("-o " + dir + ": cannot create the folder: " + ec.message());
  const std::filesystem::path folder(dir);
  TRIDENT_RETURN_IF_ERROR(
      WriteFileAtomic((folder / "ds_config.json").string(), JsonText(out.ds_config)));
  TRIDENT_RETURN_IF_ERROR(
      WriteFileAtomic((folder / "pipeline.json").string(), JsonText(out.pipeline)));
  return WriteScript((folder / "launch.sh").string(), out.launch);
}

int RunDeepSpeedExport(const ExportOptions& o, Plan plan) {
  if (o.output.empty())
    return PrintError(InvalidArgument("--to deepspeed writes a folder: give -o DIR"));
  DeepSpeedExport out = ExportDeepSpeed(plan, o.plan);
  if (!out.inexpressible.empty() && o.allow_approximate) {
    StatusOr<Plan> replanned =
        ApproximatePlan(o, plan, Framework::kDeepSpeed, "DeepSpeed", out.inexpressible);
    if (!replanned.ok()) return PrintError(replanned.status());
    plan = *std::move(replanned);
    out = ExportDeepSpeed(plan, o.plan + ", re-planned within DeepSpeed's choices");
  }
  if (!out.inexpressible.empty()) {
    return PrintError(FailedPrecondition(
        Inexpressible(o.plan, "DeepSpeed", out.inexpressible, "nothing was written")));
  }
  if (Status s = WriteDeepSpeed(o.output, out); !s.ok()) return PrintError(s);
  std::cout << "wrote " << o.output << "/ds_config.json, pipeline.json and launch.sh: DeepSpeed's "
            << "configuration of " << o.plan << " (" << plan.ToString() << ")\n";
  return 0;
}

// One file's export: its text and the choices the framework cannot express.
struct FileExport {
  std::string text;
  std::vector<FieldError> inexpressible;
};

// A framework whose export is one file: its names, how a plan becomes the file, whether the
// file is a script to run, and what to do with it once written.
struct FileFormat {
  Framework framework;
  std::string_view name;     // "Megatron-LM"
  std::string_view version;  // the version its names are facts of
  std::string_view what;     // what the file is: "launch", "job"
  std::function<FileExport(const Plan& plan, const std::string& label)> exporter;
  bool executable;
  std::function<std::string(const Plan& plan, const std::string& output)> next_step;
};

FileFormat Megatron() {
  auto exporter = [](const Plan& plan, const std::string& label) -> FileExport {
    MegatronExport out = ExportMegatron(plan);
    return {out.inexpressible.empty() ? MegatronScript(plan, out, label) : "",
            std::move(out.inexpressible)};
  };
  auto next = [](const Plan&, const std::string& output) {
    return "run it on each node with the training arguments, e.g. " + output +
           " --data-path DATA --tokenizer-type ... --train-iters N";
  };
  return {Framework::kMegatron, "Megatron-LM", MegatronVersion(), "launch", exporter, true, next};
}

FileFormat Torchtitan() {
  auto exporter = [](const Plan& plan, const std::string& label) -> FileExport {
    TorchtitanExport out = ExportTorchtitan(plan, label);
    return {std::move(out.toml), std::move(out.inexpressible)};
  };
  auto next = [](const Plan& plan, const std::string& output) {
    const std::vector<int> nodes = PlanNodeSizes(plan);
    return "run it on each node: torchrun --nnodes " + std::to_string(nodes.size()) +
           " --nproc-per-node " + std::to_string(nodes.front()) +
           " -m torchtitan.train --job.config_file " + output;
  };
  return {Framework::kTorchtitan, "torchtitan", TorchtitanVersion(), "job", exporter, false, next};
}

// Megatron-LM's script or torchtitan's job file, on stdout or in -o FILE.
int RunFileExport(const ExportOptions& o, Plan loaded, const FileFormat& format) {
  std::optional<Plan> plan = std::move(loaded);
  std::string label = o.plan;  // what the file says it holds
  FileExport out = format.exporter(*plan, label);
  if (!out.inexpressible.empty() && o.allow_approximate) {
    StatusOr<Plan> replanned =
        ApproximatePlan(o, *plan, format.framework, format.name, out.inexpressible);
    if (!replanned.ok()) return PrintError(replanned.status());
    plan = *std::move(replanned);
    label = o.plan + ", re-planned within " + std::string(format.name) + "'s choices";
    out = format.exporter(*plan, label);
  }
  if (!out.inexpressible.empty()) {
    return PrintError(FailedPrecondition(
        Inexpressible(o.plan, format.version, out.inexpressible, "nothing was written")));
  }
  if (o.output.empty()) {
    std::cout << out.text;
    return 0;
  }
  Status written =
      format.executable ? WriteScript(o.output, out.text) : WriteFileAtomic(o.output, out.text);
  if (!written.ok()) return PrintError(written);
  std::cout << "wrote " << o.output << ": the " << format.name << " " << format.what << " of "
            << o.plan << " (" << plan->ToString() << ")\n"
            << format.next_step(*plan, o.output) << "\n";
  return 0;
}

int RunExport(const ExportOptions& o) {
  StatusOr<Plan> plan = LoadPlan(o.plan);
  if (!plan.ok()) return PrintError(plan.status());
  if (o.to == "deepspeed") return RunDeepSpeedExport(o, *std::move(plan));
  return RunFileExport(o, *std::move(plan), o.to == "torchtitan" ? Torchtitan() : Megatron());
}

}  // namespace

void AddExportCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a plan as another framework's launch (Megatron-LM, torchtitan, DeepSpeed)");
  cmd->add_option("plan", o->plan, "Plan file (trident plan -o PLAN)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--to", o->to, "The framework: megatron, torchtitan or deepspeed")
      ->required()
      ->check(CLI::IsMember({"megatron", "torchtitan", "deepspeed"}));
  cmd->add_option("-o,--output", o->output,
                  "megatron: the script, torchtitan: the job TOML to write [default: stdout]; "
                  "deepspeed: the folder for "
                  "ds_config.json, pipeline.json and launch.sh");
  cmd->add_flag("--allow-approximate", o->allow_approximate,
                "When the framework cannot express the plan, re-plan the job within its "
                "choices (needs --cluster) and export that, printing both predicted step times");
  AddCostOptions(cmd, &o->cost, /*cluster_required=*/false);
  cmd->footer(
      "megatron: a script that runs Megatron-LM's pretrain_gpt.py with the model's and the\n"
      "parallel arguments under torchrun (or srun and torchrun under Slurm); data, tokenizer and\n"
      "optimizer arguments are the script's own. torchtitan: the job TOML for torchtitan.train\n"
      "(of a registered model flavor: Llama 3 8B, 70B or 405B). deepspeed: ds_config.json,\n"
      "pipeline.json (the stage cuts) and launch.sh in -o DIR. A plan choice the framework\n"
      "cannot express (a schedule it lacks, per-stage replication, mixed recompute, ...) is\n"
      "named with the fix, and nothing is written, unless --allow-approximate re-plans the job\n"
      "within the framework's choices. Exit status: 0 written, 1 not expressible or bad plan,\n"
      "2 usage.");
  cmd->callback([o, exit_code] { *exit_code = RunExport(*o); });
}

}  // namespace trident
