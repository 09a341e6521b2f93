// trident launch PLAN [--hostfile H | --hosts a:8,b:8] [--dry-run] [-- worker options]:
// has trident-worker --check the plan (a plan the runtime would not carry out as written
// starts nothing), places its ranks on hosts, prints the exact mpirun command and runs it under
// supervision (signals passed on, wall-clock limit). With --slurm it writes (and with
// --submit submits) an sbatch script instead. Exit: the job's status; 124 when the time
// limit was hit; 1 when nothing could start; 2 on usage errors.
#include <cctype>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

#include <unistd.h>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/launch_command.h"
#include "core/file_util.h"
#include "launcher/launch.h"
#include "launcher/mpirun_command.h"
#include "launcher/slurm_script.h"
#include "launcher/supervisor.h"

namespace trident {
namespace {

// Exit status of a job stopped at its time limit (as timeout(1) reports it).
constexpr int kTimeLimitExitCode = 124;

StatusOr<std::vector<HostSlots>> HostsFromFlags(const LaunchFlags& f) {
  if (!f.hostfile.empty()) return LoadHostfile(f.hostfile);
  if (!f.hosts.empty()) return ParseHostList(f.hosts);
  return std::vector<HostSlots>{};
}

void PrintSetup(const LaunchFlags& f, const LaunchSetup& setup) {
  const Plan& plan = setup.plan;
  std::cout << "plan: " << f.plan << ": " << plan.devices << " ranks (" << MeshText(plan.mesh)
            << "), planned for nodes of " << plan.devices_per_node << " devices\n";
  std::cout << "placement:\n" << PlacementTable(plan, setup.placement);
  for (const std::string& warning : setup.warnings) std::cerr << "warning: " << warning << "\n";
  std::cout << "command:\n  " << ShellQuote(setup.command) << "\n" << std::flush;
}

int ReportJob(const SuperviseOptions& supervise, const JobResult& job) {
  if (job.timed_out) {
    std::cerr << "error: the job ran past --time-limit " << supervise.time_limit_s
              << " s and was stopped (SIGTERM to mpirun, SIGKILL " << supervise.grace_s
              << " s later); exit status " << kTimeLimitExitCode << "\n";
    return kTimeLimitExitCode;
  }
  if (job.signal_received != 0) {
    const char* name = job.signal_received == SIGINT ? "SIGINT" : "SIGTERM";
    std::cerr << "trident launch: "
              << (job.forwarded ? std::string("passed ") + name + " on to mpirun"
                                : std::string("interrupted (") + name + " from the terminal)")
              << "; the job ended with status " << job.exit_code << "\n";
  } else if (job.exit_code != 0) {
    std::cerr << "error: the job failed with exit status " << job.exit_code << "\n";
  }
  return job.exit_code;
}

// Ok when `worker` carries out every field of the plan as written (trident-worker --check PLAN
// with the job's worker options, whose --device picks the backend), so a plan it would refuse
// never reaches mpirun or sbatch. A worker that is not there yet (see Worker) checks it when
// its ranks start.
Status CheckPlanWithWorker(const LaunchFlags& f, const std::string& worker) {
  if (access(worker.c_str(), X_OK) != 0) return Status::Ok();
  std::vector<std::string> argv = {worker, "--check", f.plan};
  argv.insert(argv.end(), f.worker_args.begin(), f.worker_args.end());
  TRIDENT_ASSIGN_OR_RETURN(JobResult check, RunSupervised(argv, SuperviseOptions{}));
  if (check.exit_code == 0) return Status::Ok();
  return FailedPrecondition(f.plan + ": refused by " + ShellQuote({worker, "--check"}) +
                            " (above); nothing was started");
}

int RunMpirun(const LaunchFlags& f, const std::string& worker) {
  StatusOr<std::vector<HostSlots>> hosts = HostsFromFlags(f);
  if (!hosts.ok()) return PrintError(hosts.status());
  if (!f.dry_run && !FindProgram("mpirun")) {
    return PrintError(
        NotFound("mpirun is not on PATH; install Open MPI (apt-get install openmpi-bin)"));
  }
  LaunchRequest request;
  request.plan_path = f.plan;
  request.hosts = *hosts;
  request.np_check = f.np_check;
  request.oversubscribe = f.oversubscribe;
  request.worker = worker;
  request.worker_args = f.worker_args;
  StatusOr<LaunchSetup> setup = PrepareLaunch(request, DetectLocalMachine());
  if (!setup.ok()) return PrintError(setup.status());
  if (Status s = CheckPlanWithWorker(f, worker); !s.ok()) return PrintError(s);
  PrintSetup(f, *setup);
  if (f.dry_run) return 0;
  SuperviseOptions supervise;
  supervise.time_limit_s = f.time_limit_s;
  StatusOr<JobResult> job = RunSupervised(setup->command, supervise);
  if (!job.ok()) return PrintError(job.status());
  return ReportJob(supervise, *job);
}

// "trident-" and the plan file's stem, in characters safe in a job name.
std::string JobName(const std::string& plan_path) {
  std::string name = "trident-" + std::filesystem::path(plan_path).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return name;
}

int RunSlurm(const LaunchFlags& f, const std::string& worker) {
  StatusOr<Plan> plan = LoadPlan(f.plan);
  if (!plan.ok()) return PrintError(plan.status());
  StatusOr<int> threads = WorkerThreads(f.worker_args);
  if (!threads.ok()) return PrintError(threads.status());
  if (Status s = CheckPlanWithWorker(f, worker); !s.ok()) return PrintError(s);
  if (f.submit && !FindProgram("sbatch")) {
    return PrintError(NotFound(
        "--submit: sbatch is not on PATH, so this machine has no Slurm client; run without "
        "--submit to write the script, then run 'sbatch SCRIPT' on a Slurm login node"));
  }
  SbatchOptions options{JobName(f.plan), worker,   AbsolutePlanPath(f.plan),
                        f.worker_args,   *threads, f.time_limit_s};
  std::string script = SbatchScript(*plan, options);
  std::string path = f.sbatch_path.empty()
                         ? std::filesystem::path(f.plan).replace_extension(".sbatch").string()
                         : f.sbatch_path;
  if (f.dry_run) {
    std::cout << script << "command:\n  " << ShellQuote({"sbatch", path}) << "\n";
    return 0;
  }
  Status written = WriteFileAtomic(path, script);
  if (!written.ok()) return PrintError(written);
  std::error_code ec;
  std::filesystem::permissions(path, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add, ec);
  std::cout << "wrote " << path << "\ncommand:\n  " << ShellQuote({"sbatch", path}) << "\n"
            << std::flush;
  if (!f.submit) return 0;
  StatusOr<JobResult> job = RunSupervised({"sbatch", path}, SuperviseOptions{});
  if (!job.ok()) return PrintError(job.status());
  if (job->exit_code != 0)
    std::cerr << "error: sbatch failed with status " << job->exit_code << "\n";
  return job->exit_code;
}

void AddHostOptions(CLI::App* cmd, LaunchFlags* f) {
  CLI::Option* hostfile = cmd->add_option("--hostfile", f->hostfile,
                                          "Open MPI hostfile: 'HOST slots=N' per line (# comments)")
                              ->check(CLI::ExistingFile);
  CLI::Option* hosts = cmd->add_option("--hosts", f->hosts, "Hosts and their slots, e.g. a:8,b:8");
  hostfile->excludes(hosts);
  cmd->add_flag("--np-check", f->np_check,
                "Require the hosts to offer exactly the plan's ranks (every slot used)");
  cmd->add_flag("--oversubscribe", f->oversubscribe,
                "Let ranks share cores (added anyway when this machine has too few)");
}

void AddSlurmOptions(CLI::App* cmd, LaunchFlags* f) {
  CLI::Option* slurm =
      cmd->add_flag("--slurm", f->slurm, "Write an sbatch script (srun, one task per rank)");
  cmd->add_flag("--submit", f->submit, "With --slurm: submit the script with sbatch")->needs(slurm);
  cmd->add_option("-o,--output", f->sbatch_path,
                  "With --slurm: the script's path [default: the plan's, with .sbatch]")
      ->needs(slurm);
  for (const char* name : {"--hostfile", "--hosts", "--np-check", "--oversubscribe"}) {
    slurm->excludes(cmd->get_option(name));
  }
}

// The trident-worker the job runs: the one beside this trident. A command only printed
// (--dry-run) or a script only written (--slurm without --submit) names it even when this build
// has none (no MPI): the job runs it on the cluster's hosts, where it must be at that path.
StatusOr<std::string> Worker(const LaunchFlags& f) {
  StatusOr<std::string> worker = WorkerBesideSelf();
  if (worker.ok() || !(f.dry_run || (f.slurm && !f.submit))) return worker;
  TRIDENT_ASSIGN_OR_RETURN(std::string self, SelfPath());
  std::string path = (std::filesystem::path(self).parent_path() / "trident-worker").string();
  std::cerr << "note: " << path
            << " is not there yet; the job's hosts need it at that path, and its ranks check the "
               "plan when they start\n";
  return path;
}

}  // namespace

int RunLaunch(const LaunchFlags& f) {
  StatusOr<std::string> worker = Worker(f);
  if (!worker.ok()) return PrintError(worker.status());
  return f.slurm ? RunSlurm(f, *worker) : RunMpirun(f, *worker);
}

void AddLaunchCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<LaunchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Start a plan's ranks with mpirun (trident-worker), or write an sbatch script");
  cmd->add_option("plan", f->plan, "Plan file (trident plan -o PLAN)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("worker_options", f->worker_args,
                  "Options for every trident-worker rank, after '--' (e.g. -- --steps 100)");
  AddHostOptions(cmd, f.get());
  cmd->add_flag("--dry-run", f->dry_run, "Print the placement and the command; start nothing");
  cmd->add_option("--time-limit", f->time_limit_s,
                  "Stop the job after this many seconds of wall clock (exit status 124)")
      ->check(CLI::PositiveNumber);
  AddSlurmOptions(cmd, f.get());
  cmd->footer(
      "Without --hostfile or --hosts every rank runs on this machine. Ranks are placed in\n"
      "rank order, a whole plan node (devices_per_node ranks) per host, so a tp group never\n"
      "spans hosts. trident-worker is the one beside this trident, at the same path on every\n"
      "host; 'trident-worker --check PLAN' (with the worker options) runs first, and a plan it\n"
      "refuses starts nothing. Exit status: the job's; 124 when --time-limit was hit; 1 when it "
      "could not start.");
  cmd->callback([f, exit_code] { *exit_code = RunLaunch(*f); });
}

}  // namespace trident
