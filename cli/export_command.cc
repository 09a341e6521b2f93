// trident export PLAN --to megatron [-o FILE]: the plan as another framework's launch script
// (launcher/megatron_export.h), or, exit 1 with nothing written, each of the plan's choices the
// framework cannot express, with the fix.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/format.h"
#include "core/file_util.h"
#include "launcher/megatron_export.h"

namespace trident {
namespace {

struct ExportOptions {
  std::string plan;
  std::string to;
  std::string output;  // "": stdout
};

Status Inexpressible(const std::string& plan_path, const MegatronExport& out) {
  std::string message = plan_path + ": " + std::string(MegatronVersion()) + " cannot express " +
                        std::to_string(out.inexpressible.size()) +
                        (out.inexpressible.size() == 1 ? " choice" : " choices") +
                        " of this plan; nothing was written:";
  for (const FieldError& e : out.inexpressible) message += "\n  " + FormatFieldError(e);
  return FailedPrecondition(message);
}

Status WriteScript(const std::string& path, const std::string& script) {
  TRIDENT_RETURN_IF_ERROR(WriteFileAtomic(path, script));
  std::error_code ec;
  std::filesystem::permissions(path, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add, ec);
  return Status::Ok();
}

int RunExport(const ExportOptions& o) {
  StatusOr<Plan> plan = LoadPlan(o.plan);
  if (!plan.ok()) return PrintError(plan.status());
  const MegatronExport out = ExportMegatron(*plan);
  if (!out.inexpressible.empty()) return PrintError(Inexpressible(o.plan, out));
  const std::string script = MegatronScript(*plan, out, o.plan);
  if (o.output.empty()) {
    std::cout << script;
    return 0;
  }
  if (Status written = WriteScript(o.output, script); !written.ok()) return PrintError(written);
  std::cout << "wrote " << o.output << ": the Megatron-LM launch of " << o.plan << " ("
            << plan->ToString() << ")\n"
            << "run it on each node with the training arguments, e.g. " << o.output
            << " --data-path DATA --tokenizer-type ... --train-iters N\n";
  return 0;
}

}  // namespace

void AddExportCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a plan as another framework's launch script (Megatron-LM)");
  cmd->add_option("plan", o->plan, "Plan file (trident plan -o PLAN)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--to", o->to, "The framework: megatron")
      ->required()
      ->check(CLI::IsMember({"megatron"}));
  cmd->add_option("-o,--output", o->output, "Script to write [default: stdout]");
  cmd->footer(
      "The script holds the model's and the parallel arguments and runs Megatron-LM's\n"
      "pretrain_gpt.py with torchrun (or srun and torchrun under Slurm); data, tokenizer and\n"
      "optimizer arguments are the script's own arguments. A plan choice Megatron-LM cannot\n"
      "express (a schedule it lacks, per-stage replication, mixed recompute) is named with the\n"
      "fix, and nothing is written. Exit status: 0 written, 1 not expressible or bad plan, 2\n"
      "usage.");
  cmd->callback([o, exit_code] { *exit_code = RunExport(*o); });
}

}  // namespace trident
