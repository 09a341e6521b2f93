// trident run MODEL: the whole flow on this machine — measure the layers (or reuse a cached
// profile of the same model, device, build and threads), measure the links under mpirun
// (cached the same way), plan, launch the plan with trident-worker, and finish with the run's
// measured figures against the plan's predictions and where its files are. Each step runs the
// same `trident` subcommand a user would, and prints its command first.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/launch_command.h"
#include "core/cluster.h"
#include "core/digest.h"
#include "core/file_util.h"
#include "core/model_spec.h"
#include "core/version.h"
#include "launcher/launch.h"
#include "launcher/local_machine.h"
#include "launcher/mpirun_command.h"
#include "launcher/supervisor.h"
#include "profiler/measured_profile.h"

namespace trident {
namespace {

struct RunFlags {
  std::string model;
  std::string cluster = "configs/clusters/local-cpu.yaml";
  int devices = 0;
  int64_t global_batch = 16;
  int64_t steps = 50;
  int64_t seq_len = 0;
  std::string data;
  std::vector<int> micro_batches = {1, 2, 4};
  int threads = 1;
  std::vector<std::string> fix;
  std::vector<std::string> schedules;
  std::string out = "run";
  std::string cache;
  double time_limit_s = 0;
  std::vector<std::string> worker_args;
};

std::string CacheDir(const RunFlags& f) {
  if (!f.cache.empty()) return f.cache;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/trident";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/trident";
}

std::string Join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

// The tp degrees a plan of `devices` ranks may use that the model can be sharded by.
std::vector<int> TensorParallelDegrees(const ModelSpec& model, const RunFlags& f) {
  std::vector<int> tps;
  for (int tp = 1; tp <= f.devices; ++tp) {
    if (f.devices % tp != 0) continue;
    MeasuredProfileOptions options;
    options.micro_batches = f.micro_batches;
    options.tps = {tp};
    options.seq_len = f.seq_len;
    options.threads = f.threads;
    if (CheckMeasuredOptions(model, options, f.devices).ok()) tps.push_back(tp);
  }
  return tps;
}

// `program` on `ranks` ranks of this machine: mpirun for more than one.
std::vector<std::string> OnRanks(int ranks, int threads, std::vector<std::string> program) {
  if (ranks == 1) return program;
  return LocalMpirunCommand(ranks, threads, std::move(program), DetectLocalMachine());
}

// Runs one step's command, printed first. Its exit status (0: done).
int RunStep(const std::string& title, const std::vector<std::string>& argv) {
  std::cout << "\n" << title << "\n  " << ShellQuote(argv) << "\n" << std::flush;
  StatusOr<JobResult> job = RunSupervised(argv, SuperviseOptions{});
  if (!job.ok()) return PrintError(job.status());
  if (job->exit_code != 0) {
    std::cerr << "error: " << title << " failed (exit status " << job->exit_code << ")\n";
  }
  return job->exit_code;
}

// A cached file named by the digest of everything it depends on: reused when present (the
// commands write it atomically, so a present file is whole).
std::string CachePath(const RunFlags& f, const std::string& kind, const std::string& key) {
  return CacheDir(f) + "/" + kind + "-" + ContentDigest(key).substr(0, 16) + ".yaml";
}

int ProfileLayers(const RunFlags& f, const std::string& self, const ModelSpec& model,
                  const std::string& model_text, std::string* path) {
  const std::vector<int> tps = TensorParallelDegrees(model, f);
  const std::string key = model_text + "|seq " + std::to_string(f.seq_len) + "|mb " +
                          Join(f.micro_batches) + "|tp " + Join(tps) + "|threads " +
                          std::to_string(f.threads) + "|" + ThisCpuModelName() + "|" +
                          TridentBuild();
  *path = CachePath(f, "profile-" + model.name, key);
  if (std::filesystem::exists(*path)) {
    std::cout << "\n[1/4] layer profile: reusing " << *path
              << " (same model, device, build and threads)\n";
    return 0;
  }
  std::vector<std::string> argv = {self, "profile", f.model, "--device", "cpu", "-o", *path};
  argv.insert(argv.end(), {"--micro-batch", Join(f.micro_batches), "--tp", Join(tps), "--threads",
                           std::to_string(f.threads)});
  if (f.seq_len > 0) argv.insert(argv.end(), {"--seq", std::to_string(f.seq_len)});
  return RunStep("[1/4] layer profile: measuring on this machine",
                 OnRanks(f.devices, f.threads, argv));
}

int ProfileLinks(const RunFlags& f, const std::string& self, const std::string& cluster_text,
                 std::string* path) {
  if (f.devices == 1) {
    *path = f.cluster;
    std::cout << "\n[2/4] link profile: one rank, no links to measure\n";
    return 0;
  }
  const std::string key = cluster_text + "|ranks " + std::to_string(f.devices) + "|" +
                          ThisCpuModelName() + "|" + TridentBuild();
  *path = CachePath(f, "cluster", key);
  if (std::filesystem::exists(*path)) {
    std::cout << "\n[2/4] link profile: reusing " << *path << "\n";
    return 0;
  }
  return RunStep("[2/4] link profile: point-to-point and collectives under mpirun",
                 OnRanks(f.devices, 1,
                         {self, "profile", "--comm", "--cluster", f.cluster, "--max-bytes", "4M",
                          "-o", *path}));
}

int PlanStep(const RunFlags& f, const std::string& self, const std::string& profile,
             const std::string& cluster, const std::string& plan) {
  // --zero1 off: the runtime keeps every replica's whole optimizer state.
  std::vector<std::string> argv = {self,        "plan",  "--model", f.model, "--cluster", cluster,
                                   "--profile", profile, "--zero1", "off",   "-o",        plan};
  argv.insert(argv.end(), {"--devices", std::to_string(f.devices), "--global-batch",
                           std::to_string(f.global_batch)});
  if (f.seq_len > 0) argv.insert(argv.end(), {"--seq", std::to_string(f.seq_len)});
  for (const std::string& fix : f.fix) argv.insert(argv.end(), {"--fix", fix});
  for (const std::string& s : f.schedules) argv.insert(argv.end(), {"--schedule", s});
  return RunStep("[3/4] plan", argv);
}

int TrainStep(const RunFlags& f, const std::string& plan) {
  LaunchFlags launch;
  launch.plan = plan;
  launch.time_limit_s = f.time_limit_s;
  launch.worker_args = {"--steps",   std::to_string(f.steps),  "--out", f.out,
                        "--threads", std::to_string(f.threads)};
  if (f.steps >= 2) launch.worker_args.insert(launch.worker_args.end(), {"--trace-steps", "2"});
  if (!f.data.empty()) launch.worker_args.insert(launch.worker_args.end(), {"--data", f.data});
  launch.worker_args.insert(launch.worker_args.end(), f.worker_args.begin(), f.worker_args.end());
  std::cout << "\n[4/4] train: trident launch " << plan << "\n" << std::flush;
  return RunLaunch(launch);
}

void PrintFiles(const RunFlags& f, const std::string& plan, const std::string& profile,
                const std::string& cluster) {
  std::cout << "\nfiles:\n"
            << "  profile   " << profile << "\n"
            << "  cluster   " << cluster << "\n"
            << "  plan      " << plan << "\n"
            << "  metrics   " << f.out << "/metrics.jsonl (one JSON line per step and rank)\n"
            << "  summary   " << f.out << "/summary.json (measured against predicted)\n";
  if (f.steps >= 2) {
    std::cout << "  trace     " << f.out << "/trace.json (step 2 on every rank; open in "
              << "https://ui.perfetto.dev)\n";
  }
}

int RunAll(RunFlags f) {
  StatusOr<std::string> model_text = ReadFile(f.model);
  if (!model_text.ok()) return PrintError(model_text.status());
  StatusOr<ModelSpec> model = ParseModelSpec(*model_text, f.model);
  if (!model.ok()) return PrintError(model.status());
  StatusOr<std::string> cluster_text = ReadFile(f.cluster);
  if (!cluster_text.ok()) {
    return PrintError(NotFound("--cluster " + f.cluster +
                               ": no such file; pass --cluster FILE describing this machine (see "
                               "configs/clusters/local-cpu.yaml)"));
  }
  StatusOr<ClusterSpec> cluster = ParseClusterSpec(*cluster_text, f.cluster);
  if (!cluster.ok()) return PrintError(cluster.status());
  if (f.devices == 0) f.devices = static_cast<int>(cluster->TotalDevices());
  if (f.devices > cluster->TotalDevices()) {
    return PrintError(
        InvalidArgument("--devices " + std::to_string(f.devices) + ": cluster " + cluster->name +
                        " (" + f.cluster + ") has " + std::to_string(cluster->TotalDevices()) +
                        " devices; ask for fewer or describe this machine in --cluster"));
  }
  StatusOr<std::string> self = SelfPath();
  if (!self.ok()) return PrintError(self.status());
  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  if (!ec) std::filesystem::create_directories(CacheDir(f), ec);
  if (ec)
    return PrintError(
        IoError("cannot create " + f.out + " or " + CacheDir(f) + ": " + ec.message()));
  std::cout << "trident run: " << model->name << " on " << f.devices << " rank"
            << (f.devices == 1 ? "" : "s") << " of " << cluster->name << ", global batch "
            << f.global_batch << ", " << f.steps << " steps -> " << f.out << "/\n";
  std::string profile, measured_cluster;
  const std::string plan = f.out + "/plan.yaml";
  if (int rc = ProfileLayers(f, *self, *model, *model_text, &profile); rc != 0) return rc;
  if (int rc = ProfileLinks(f, *self, *cluster_text, &measured_cluster); rc != 0) return rc;
  if (int rc = PlanStep(f, *self, profile, measured_cluster, plan); rc != 0) return rc;
  if (int rc = TrainStep(f, plan); rc != 0) return rc;
  PrintFiles(f, plan, profile, measured_cluster);
  return 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Profile this machine, plan, launch and train: the whole flow in one command");
  cmd->add_option("model", f->model, "Model file, e.g. configs/models/gpt-tiny.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--cluster", f->cluster, "Cluster file describing this machine")
      ->capture_default_str();
  cmd->add_option("--devices", f->devices, "Ranks to train on [default: the cluster's devices]")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--global-batch", f->global_batch, "Sequences per optimizer step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--steps", f->steps, "Training steps")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--seq", f->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--data", f->data,
                  "Text file or folder [default: the worker's default corpus]; 'synthetic'");
  cmd->add_option("--micro-batch", f->micro_batches, "Micro-batch sizes to profile and plan with")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--threads", f->threads, "Compute threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--fix", f->fix, "Fixed degrees for the planner, e.g. pp=2 (see trident plan)")
      ->delimiter(',');
  cmd->add_option("--schedule", f->schedules, "Schedules the planner considers")->delimiter(',');
  cmd->add_option("--out", f->out, "Folder for the plan, metrics, summary and trace")
      ->capture_default_str();
  cmd->add_option("--cache", f->cache,
                  "Folder of cached profiles [default: $XDG_CACHE_HOME/trident or "
                  "~/.cache/trident]");
  cmd->add_option("--time-limit", f->time_limit_s, "Stop training after this many seconds")
      ->check(CLI::PositiveNumber);
  cmd->add_option("worker_options", f->worker_args,
                  "More trident-worker options, after '--' (e.g. -- --lr 3e-3)");
  cmd->callback([f, exit_code] { *exit_code = RunAll(*f); });
}

}  // namespace trident
