// trident run MODEL: the whole flow on this machine (launcher/run_flow.h) — the layer and link
// profiles (cached), the plan, training — and finally the run's files. Each step runs the same
// `trident` subcommand a user would, and prints its command first.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/fix_flag.h"
#include "cli/format.h"
#include "cli/launch_command.h"
#include "core/cluster.h"
#include "core/file_util.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "core/version.h"
#include "launcher/local_machine.h"
#include "launcher/run_flow.h"
#include "launcher/supervisor.h"
#include "profiler/measured_options.h"

namespace trident {
namespace {

struct RunFlags {
  std::string model;
  std::string device = "cpu";
  std::string cluster;  // empty: configs/clusters/local-cpu.yaml for cpu; cuda needs one
  int devices = 0;
  int64_t global_batch = 16;
  int64_t steps = 50;
  int64_t seq_len = 0;
  std::string dtype;
  std::string data;
  std::vector<int> micro_batches = {1, 2, 4};
  int threads = 1;
  std::vector<std::string> fix;
  std::vector<std::string> schedules;
  std::string sequence_parallel = "auto";
  std::string dp_sharding = "none,optimizer";
  std::string out = "run";
  std::string cache;
  double time_limit_s = 0;
  std::vector<std::string> worker_args;
};

// Child processes for the steps; training is `trident launch` in this process.
class SupervisedSteps : public RunFlowSteps {
 public:
  StatusOr<int> Run(const std::vector<std::string>& argv) override {
    TRIDENT_ASSIGN_OR_RETURN(JobResult job, RunSupervised(argv, SuperviseOptions{}));
    return job.exit_code;
  }

  int Train(const std::string& plan, const std::vector<std::string>& worker_args,
            double time_limit_s) override {
    LaunchFlags launch;
    launch.plan = plan;
    launch.time_limit_s = time_limit_s;
    launch.worker_args = worker_args;
    return RunLaunch(launch);
  }
};

// The cp degrees the layer profile measures: 1, and N for --fix cp=N when a profile of `devices`
// ranks can measure it (the search weighs cp on this machine only when asked: each degree costs
// a measurement of every layer). Any other N is left to the planner, whose --fix check names it.
std::vector<int> ProfiledCpDegrees(const std::vector<std::string>& fix, const ModelSpec& model,
                                   MeasuredProfileOptions options, int devices) {
  SearchConstraints fixed;
  if (!ParseFix(fix, &fixed).ok() || fixed.cp.value_or(1) == 1) return {1};
  options.cps = {1, *fixed.cp};
  return CheckMeasuredOptions(model, options, devices).ok() ? options.cps : std::vector<int>{1};
}

// --device cuda runs on this machine's GPUs, one rank each: --devices defaults to the GPUs the
// driver lists and may not exceed them. Without a listing (no driver, or /proc hidden) the
// count must be given, and the profile step reports what CUDA finds.
Status CheckLocalGpus(const std::vector<std::string>& gpus, int* devices) {
  const int listed = static_cast<int>(gpus.size());
  if (listed == 0) {
    if (*devices > 0) return Status::Ok();
    return InvalidArgument(
        "--device cuda: the NVIDIA driver lists no GPU on this machine "
        "(/proc/driver/nvidia/gpus); pass --devices N for its GPUs, or use --device cpu");
  }
  if (*devices == 0) *devices = listed;
  if (*devices > listed) {
    return InvalidArgument("--devices " + std::to_string(*devices) + ": this machine has " +
                           std::to_string(listed) + " GPU" + (listed == 1 ? "" : "s") +
                           " and trident run trains on one rank per GPU here; ask for at most " +
                           std::to_string(listed) +
                           ", or plan and launch larger jobs with "
                           "trident plan and trident launch --hostfile");
  }
  return Status::Ok();
}

// The flow's options from the flags and the files they name, and the cluster's name; what is
// wrong when they do not hold together.

StatusOr<RunFlowOptions> FlowOptions(const RunFlags& f, std::string* cluster_name) {
  RunFlowOptions o;
  o.model = f.model;
  o.device = f.device;
  o.cluster = f.cluster;
  if (o.cluster.empty() && f.device == "cuda") {
    return InvalidArgument(
        "--device cuda needs --cluster FILE describing this machine's GPUs and links (e.g. "
        "configs/clusters/dgx-h100.yaml): the planner takes the device memory and the links "
        "the profiles do not measure from it");
  }
  if (o.cluster.empty()) o.cluster = "configs/clusters/local-cpu.yaml";
  o.devices = f.devices;
  o.global_batch = f.global_batch;
  o.steps = f.steps;
  o.seq_len = f.seq_len;
  o.dtype = f.dtype;
  o.data = f.data;
  o.micro_batches = f.micro_batches;
  o.threads = f.threads;
  o.fix = f.fix;
  o.schedules = f.schedules;
  o.sequence_parallel = f.sequence_parallel;
  o.dp_sharding = f.dp_sharding;
  o.out = f.out;
  o.cache = f.cache;
  o.time_limit_s = f.time_limit_s;
  o.worker_args = f.worker_args;
  TRIDENT_ASSIGN_OR_RETURN(o.model_text, ReadFile(f.model));
  TRIDENT_ASSIGN_OR_RETURN(ModelSpec model, ParseModelSpec(o.model_text, f.model));
  TRIDENT_RETURN_IF_ERROR(
      CheckNotGeneric(model, "trident run cannot measure or train it",
                      "plan it with trident plan --profile and the profile imported with it")
          .WithPrefix(f.model));
  StatusOr<std::string> cluster_text = ReadFile(o.cluster);
  if (!cluster_text.ok()) {
    return NotFound("--cluster " + o.cluster +
                    ": no such file; pass --cluster FILE describing this machine (see "
                    "configs/clusters/local-cpu.yaml)");
  }
  o.cluster_text = *cluster_text;
  TRIDENT_ASSIGN_OR_RETURN(ClusterSpec cluster, ParseClusterSpec(o.cluster_text, o.cluster));
  std::vector<std::string> gpus;
  if (o.device == "cuda") {
    gpus = ThisGpuModels();
    TRIDENT_RETURN_IF_ERROR(CheckLocalGpus(gpus, &o.devices));
  }
  if (o.devices == 0) o.devices = static_cast<int>(cluster.TotalDevices());
  if (o.devices > cluster.TotalDevices()) {
    return InvalidArgument("--devices " + std::to_string(o.devices) + ": cluster " + cluster.name +
                           " (" + o.cluster + ") has " + std::to_string(cluster.TotalDevices()) +
                           " devices; ask for fewer or describe this machine in --cluster");
  }
  TRIDENT_ASSIGN_OR_RETURN(o.trident, SelfPath());
  if (o.cache.empty())
    o.cache = DefaultRunCacheDir(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  o.model_name = model.name;
  *cluster_name = cluster.name;
  MeasuredProfileOptions profile;
  profile.micro_batches = o.micro_batches;
  profile.seq_len = o.seq_len;
  profile.threads = o.threads;
  o.profile_tps = MeasurableTpDegrees(model, profile, o.devices);
  profile.tps = o.profile_tps;
  o.profile_cps = ProfiledCpDegrees(f.fix, model, profile, o.devices);
  o.machine = ThisCpuModelName() + "|" + TridentBuild();
  for (const std::string& gpu : gpus) o.machine += "|" + gpu;
  return o;
}

void PrintFiles(const RunFlowOptions& o, const RunFlowFiles& files) {
  std::cout << "\nfiles:\n"
            << "  profile   " << files.profile << "\n"
            << "  cluster   " << files.cluster << "\n"
            << "  plan      " << files.plan << "\n"
            << "  metrics   " << o.out << "/metrics.jsonl (one JSON line per step and rank)\n"
            << "  summary   " << o.out << "/summary.json (measured against predicted)\n";
  if (o.steps >= 2) {
    std::cout << "  trace     " << o.out << "/trace.json (step 2 on every rank; open in "
              << "https://ui.perfetto.dev)\n";
  }
}

int RunAll(const RunFlags& f) {
  std::string cluster_name;
  StatusOr<RunFlowOptions> o = FlowOptions(f, &cluster_name);
  if (!o.ok()) return PrintError(o.status());
  std::error_code ec;
  std::filesystem::create_directories(o->out, ec);
  if (!ec) std::filesystem::create_directories(o->cache, ec);
  if (ec) {
    return PrintError(IoError("cannot create " + o->out + " or " + o->cache + ": " + ec.message()));
  }
  std::cout << "trident run: " << o->model_name << " on " << o->devices << " " << o->device
            << " rank" << (o->devices == 1 ? "" : "s") << " of " << cluster_name
            << ", global batch " << o->global_batch << ", " << o->steps << " steps -> " << o->out
            << "/\n";
  SupervisedSteps steps;
  RunFlowResult result = RunFlow(*o, DetectLocalMachine(), steps, std::cout);
  if (!result.error.empty()) std::cerr << "error: " << result.error << "\n";
  if (result.exit_code != 0) return result.exit_code;
  PrintFiles(*o, result.files);
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
  cmd->add_option("--device", f->device,
                  "Device to profile and train on: cpu, or cuda (one GPU per rank, NCCL links)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--cluster", f->cluster,
                  "Cluster file describing this machine [default: "
                  "configs/clusters/local-cpu.yaml; required with --device cuda]");
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
  cmd->add_option("--dtype", f->dtype,
                  "Training dtype: fp32, or bf16 (mixed precision: bf16 values and activations, "
                  "fp32 gradients and master weights) [default: the model's]")
      ->check(CLI::IsMember({"fp32", "bf16"}));
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
  cmd->add_option("--sequence-parallel", f->sequence_parallel,
                  "Sequence parallelism where tp > 1: on, off or auto (see trident plan)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--dp-sharding", f->dp_sharding,
                  "Sharding levels the planner considers, comma-separated: none, optimizer, "
                  "gradients, full (gradients and full only when asked, as the runtime's "
                  "per-layer reduce-scatters and gathers do not yet overlap the compute as the "
                  "plan assumes)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& list) -> std::string {
            std::stringstream items(list);
            for (std::string item; std::getline(items, item, ',');) {
              if (!ValueOf(DpShardingNames(), item).has_value()) {
                return "'" + item + "' is not a sharding level (none, optimizer, gradients, full)";
              }
            }
            return list.empty() ? "give at least one level" : "";
          },
          "LEVEL[,LEVEL...]"));
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
