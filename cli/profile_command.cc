// trident profile: a model's per-layer cost profile, measured on this machine
// (MODEL --device cpu, under mpirun for tp > 1) or computed from a cluster's hardware
// description (MODEL --analytic --cluster C); with --comm, the communication benchmarks of
// profile_comm.h, which write a cluster file instead.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/profile_comm.h"
#include "core/file_util.h"
#include "core/launcher_env.h"
#include "core/logging.h"
#include "profiler/analytic_profile.h"
#include "profiler/measured_profile.h"
#include "runtime/comm/comm_factory.h"
#include "runtime/compute/compute_factory.h"

namespace trident {
namespace {

struct ProfileOptions {
  std::string model;
  std::string cluster;
  bool analytic = false;
  bool comm = false;
  std::string device;  // empty: cpu, unless --analytic
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> tps;
  int64_t seq_len = 0;
  std::string dtype;
  int threads = 1;
  std::string clock = "wall";
  double time_budget_s = 2.0;
  int max_repeats = RepeatPolicy().max_repeats;
  int passes = MeasuredProfileOptions().passes;
  std::string output;  // empty: profile.yaml, or cluster.yaml with --comm
  CommProfileFlags comm_flags;
};

int UsageError(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 2;
}

std::string LayerRange(const LayerProfile& layer) {
  std::string range = std::to_string(layer.first_layer);
  if (layer.num_layers > 1) range += "-" + std::to_string(layer.first_layer + layer.num_layers - 1);
  return range;
}

void PrintSummary(const Profile& profile) {
  std::cout << profile.ToString() << "\n\n";
  TextTable table(
      {"layers", "kind", "entries", "fwd (mb 1, tp 1)", "bwd input", "bwd weight", "stashed"});
  for (const LayerProfile& layer : profile.layers) {
    const ProfileEntry& e = layer.entries.front();
    table.AddRow({LayerRange(layer), NameOf(LayerKindNames(), layer.kind),
                  std::to_string(layer.entries.size()), FormatMs(e.fwd_ms),
                  FormatMs(e.bwd_input_ms), FormatMs(e.bwd_weight_ms),
                  FormatBytes(static_cast<double>(e.stashed_none_bytes))});
  }
  std::cout << table.ToString();
}

// Milliseconds with three decimals below 10 ms (the small layers of small models).
std::string Ms(double ms) { return ms < 10 ? FormatFixed(ms, 3) + " ms" : FormatMs(ms); }

// One row per layer group and (micro-batch, tp).
void PrintMeasuredSummary(const Profile& profile) {
  std::cout << profile.ToString() << "\n\n";
  TextTable table({"layers", "kind", "mb", "tp", "fwd", "bwd input", "bwd weight", "+selective",
                   "+full", "stashed", "spread"});
  for (const LayerProfile& layer : profile.layers) {
    for (const ProfileEntry& e : layer.entries) {
      table.AddRow({LayerRange(layer), NameOf(LayerKindNames(), layer.kind),
                    std::to_string(e.micro_batch), std::to_string(e.tp), Ms(e.fwd_ms),
                    Ms(e.bwd_input_ms), Ms(e.bwd_weight_ms), Ms(e.recompute_selective_ms),
                    Ms(e.recompute_full_ms), FormatBytes(static_cast<double>(e.stashed_none_bytes)),
                    FormatFixed(e.spread_pct, 1) + "%"});
    }
  }
  const double load = profile.method.load_factor;
  std::cout << table.ToString()
            << "\ntimes: the median of each figure's quietest pass; load factor "
            << FormatFixed(load, 3) << ": all repeats ran " << FormatFixed(100 * (load - 1), 1)
            << "% slower at the median, and plans multiply the times by it\n";
}

int RunAnalytic(const ProfileOptions& o, const ModelSpec& model) {
  if (o.cluster.empty()) {
    return UsageError("--analytic needs --cluster C: the cluster whose device it computes");
  }
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(o.cluster);
  if (!cluster.ok()) return PrintError(cluster.status());
  AnalyticProfileOptions options{o.micro_batches, o.tps, o.seq_len,
                                 ValueOf(DTypeNames(), o.dtype).value_or(model.dtype)};
  if (o.seq_len > model.max_seq_len) {
    return PrintError(InvalidArgument("--seq " + std::to_string(o.seq_len) + " exceeds " +
                                      model.name + "'s max_seq_len " +
                                      std::to_string(model.max_seq_len)));
  }
  StatusOr<Profile> profile = AnalyticProfile(model, *cluster, options);
  if (!profile.ok()) return PrintError(profile.status());
  const std::string output = o.output.empty() ? "profile.yaml" : o.output;
  if (Status s = WriteFileAtomic(output, ProfileToYaml(*profile)); !s.ok()) return PrintError(s);
  PrintSummary(*profile);
  std::cout << "\nwrote " << output << "\n";
  return 0;
}

// Progress on stderr: a bar redrawn in place on a terminal, one line per finished
// measurement otherwise (logs stay readable).
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

  void operator()(const MeasureProgress& p) {
    std::string what = NameOf(LayerKindNames(), p.kind) + " mb " + std::to_string(p.micro_batch) +
                       " tp " + std::to_string(p.tp) + " pass " + std::to_string(p.pass) + "/" +
                       std::to_string(p.passes);
    if (tty_) {
      constexpr int kWidth = 30;
      int filled = p.total == 0 ? kWidth : kWidth * p.done / p.total;
      std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
                << p.done << "/" << p.total << " " << Elapsed() << "  " << what << "\033[K"
                << (p.done == p.total && p.result != nullptr ? "\n" : "") << std::flush;
      return;
    }
    if (p.result == nullptr) return;
    const ProfileEntry& e = p.result->entry;
    std::cerr << "profile " << p.done << "/" << p.total << " " << Elapsed() << " " << what
              << ": fwd " << Ms(e.fwd_ms) << ", bwd input " << Ms(e.bwd_input_ms) << ", bwd weight "
              << Ms(e.bwd_weight_ms) << " (" << p.result->repeats << " repeats, spread "
              << FormatFixed(e.spread_pct, 1) << "%, load " << FormatFixed(p.result->load, 3)
              << ")\n";
  }

 private:
  std::string Elapsed() const {
    auto s =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_)
            .count();
    return std::to_string(s / 60) + ":" + (s % 60 < 10 ? "0" : "") + std::to_string(s % 60);
  }

  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

// The number of ranks of the job that started this process (Open MPI's mpirun, or a PMI
// launcher: MPICH's mpiexec, srun --mpi=pmi2), or 0 when it was started on its own.
StatusOr<MeasuredProfileOptions> MeasuredOptions(const ProfileOptions& o, const ModelSpec& model) {
  if (!o.dtype.empty() && o.dtype != "fp32") {
    return InvalidArgument("--dtype " + o.dtype +
                           ": the runtime's layers compute in fp32; use --dtype fp32 or leave it "
                           "out (--analytic --cluster C computes a bf16 profile)");
  }
  const int launched = LaunchedWorldSize().value_or(0);
  MeasuredProfileOptions options;
  options.device = o.device;
  options.micro_batches = o.micro_batches;
  if (!o.tps.empty()) {
    options.tps = o.tps;
  } else if (launched > 1 && model.TensorParallelProblem(launched).empty()) {
    options.tps = {1, launched};
  }
  options.seq_len = o.seq_len;
  options.threads = o.threads;
  options.clock = o.clock == "cpu" ? TimingClock::kThreadCpu : TimingClock::kWall;
  options.repeats.budget_ms = o.time_budget_s * 1000;
  options.repeats.max_repeats = o.max_repeats;
  options.repeats.min_repeats = std::min(options.repeats.min_repeats, o.max_repeats);
  options.passes = o.passes;
  TRIDENT_RETURN_IF_ERROR(CheckMeasuredOptions(model, options, std::max(launched, 1)));
  return options;
}

// A note when other work keeps this machine's CPUs busy: timings are wall-clock times.
void PrintLoadNote() {
  StatusOr<std::string> loadavg = ReadFile("/proc/loadavg");
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!loadavg.ok() || cpus < 1) return;
  const double load = std::atof(loadavg->c_str());
  if (load < std::max(1.0, 0.25 * static_cast<double>(cpus))) return;
  std::cerr << "note: this machine is busy (load average " << FormatFixed(load, 1) << " on " << cpus
            << " CPUs); wall-clock timings will be noisier than on an idle machine\n";
}

void PrintNotes(const ModelSpec& model) {
  PrintLoadNote();
  if (model.dropout > 0) {
    std::cerr << "note: " << model.name << " has dropout " << model.dropout
              << ", which the runtime layers do not implement; measuring it without dropout\n";
  }
  if (model.dtype != DType::kFp32) {
    std::cerr << "note: " << model.name << " trains in " << DTypeName(model.dtype)
              << "; the runtime's layers compute in fp32, so the profile is of fp32\n";
  }
}

// The job's communicator when this process is one rank of a job, or when tp > 1 asks for one:
// NCCL (tensors) over MPI (host figures) on GPUs, MPI alone on CPUs.
StatusOr<std::unique_ptr<Comm>> WorldFor(const MeasuredProfileOptions& options,
                                         const Compute& compute) {
  int largest_tp = *std::max_element(options.tps.begin(), options.tps.end());
  if (!LaunchedWorldSize() && largest_tp == 1) return std::unique_ptr<Comm>();
  if (options.device == "cuda") {
    return MakeWorldComm("nccl", CommOptions{.device_stream = compute.device_stream()});
  }
  return MakeWorldComm("mpi");
}

int WriteMeasured(const Profile& profile, const std::string& output) {
  if (Status s = WriteFileAtomic(output, ProfileToYaml(profile)); !s.ok()) return PrintError(s);
  PrintMeasuredSummary(profile);
  std::cout << "\nwrote " << output << "\n";
  return 0;
}

int RunMeasured(const ProfileOptions& o, const ModelSpec& model) {
  const bool lead = LaunchedWorldSize() == 0 || LogContext::FromEnvironment().rank.value_or(0) == 0;
  StatusOr<MeasuredProfileOptions> options = MeasuredOptions(o, model);
  if (!options.ok()) return lead ? PrintError(options.status()) : 1;
  StatusOr<std::unique_ptr<Compute>> compute =
      MakeCompute({.device = options->device, .threads = options->threads});
  if (!compute.ok()) return PrintError(compute.status());
  StatusOr<std::unique_ptr<Comm>> world = WorldFor(*options, **compute);
  if (!world.ok()) return PrintError(world.status());
  Comm* comm = world->get();
  const bool rank0 = comm == nullptr || comm->Rank() == 0;
  if (rank0) PrintNotes(model);
  ProgressPrinter printer;
  MeasureProgressFn progress;
  if (rank0) progress = [&printer](const MeasureProgress& p) { printer(p); };
  StatusOr<Profile> profile = MeasureProfile(model, *options, **compute, comm, progress);
  if (!profile.ok()) {
    if (comm == nullptr || comm->Size() == 1) return PrintError(profile.status());
    comm->FailJob(profile.status());  // peers may wait in a collective
  }
  if (!rank0) return 0;
  return WriteMeasured(*profile, o.output.empty() ? "profile.yaml" : o.output);
}

int RunComm(ProfileOptions o) {
  if (o.cluster.empty()) {
    return UsageError("--comm needs --cluster C: the cluster file whose measured figures it fills");
  }
  o.comm_flags.cluster = o.cluster;
  o.comm_flags.output = o.output.empty() ? "cluster.yaml" : o.output;
  return RunCommProfileCommand(o.comm_flags);
}

int RunProfile(const ProfileOptions& o) {
  if (o.comm) return RunComm(o);
  if (o.model.empty()) {
    return UsageError(
        "MODEL is required: the model file to profile, e.g. trident profile "
        "configs/models/gpt-tiny.yaml --device cpu (only --comm runs without one)");
  }
  if (o.analytic && !o.device.empty()) {
    return UsageError("--analytic computes the costs of --cluster's device; drop --device " +
                      o.device + ", or drop --analytic to measure on this machine");
  }
  if (!o.analytic && !o.cluster.empty()) {
    return UsageError(
        "--cluster is read by --analytic and --comm: pass --analytic to compute the profile "
        "from the cluster's hardware description, or drop --cluster to measure on this machine");
  }
  StatusOr<ModelSpec> model = LoadModelSpec(o.model);
  if (!model.ok()) return PrintError(model.status());
  if (o.analytic) return RunAnalytic(o, *model);
  ProfileOptions measured = o;
  if (measured.device.empty()) measured.device = "cpu";
  return RunMeasured(measured, *model);
}

void AddMeasureFlags(CLI::App* cmd, ProfileOptions* o) {
  cmd->add_option("--device", o->device,
                  "Device to measure on: cpu, or cuda (one GPU per rank) [default: cpu]");
  cmd->add_option("--threads", o->threads, "Compute threads per rank (measured)")
      ->capture_default_str();
  cmd->add_option("--clock", o->clock,
                  "wall: elapsed time; cpu: the thread's CPU time, steadier on a shared machine "
                  "(--threads 1)")
      ->check(CLI::IsMember({"wall", "cpu"}))
      ->capture_default_str();
  cmd->add_option("--time-budget-s", o->time_budget_s,
                  "Seconds each measurement may take before it stops repeating (measured)")
      ->capture_default_str();
  cmd->add_option("--max-repeats", o->max_repeats, "Timed repeats per measurement at most")
      ->capture_default_str();
  cmd->add_option("--passes", o->passes,
                  "Turns each measurement takes, its budget shared out, so its samples span the "
                  "whole profile; each time is its quietest turn's median (measured)")
      ->capture_default_str();
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ProfileOptions>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Write a model's per-layer cost profile: measured on this machine (--device cpu; "
      "under mpirun for --tp > 1) or computed (--analytic --cluster C); or, with --comm, "
      "measure the links");
  cmd->add_option("model", o->model, "Model file (not with --comm)")->check(CLI::ExistingFile);
  cmd->add_flag("--analytic", o->analytic,
                "Compute the costs from the cluster's hardware description");
  cmd->add_flag("--comm", o->comm,
                "Measure point-to-point and collective links under mpirun and write them into "
                "a cluster file");
  cmd->add_option("--cluster", o->cluster, "Cluster file (--analytic, --comm)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--micro-batch", o->micro_batches, "Micro-batch sizes")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--tp", o->tps,
                  "Tensor-parallel degrees [default measured: 1, and the job's size under mpirun "
                  "when it shards the model; --analytic: every one that fits a node]")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--seq", o->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--dtype", o->dtype, "Training dtype [default: the model's; fp32 measured]")
      ->check(CLI::IsMember(NamesOf(DTypeNames())));
  AddMeasureFlags(cmd, o.get());
  cmd->add_option("-o,--output", o->output,
                  "File to write [default: profile.yaml; cluster.yaml with --comm]");
  AddCommProfileFlags(cmd, &o->comm_flags);
  cmd->callback([o, exit_code] { *exit_code = RunProfile(*o); });
}

}  // namespace trident
