// trident profile: analytic profiles computed here; measured ones (MODEL --device, --comm) by
// trident-profile, the binary beside this one that links the device backends, which this
// process becomes (execv) with the same arguments.
#include "cli/profile_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/format.h"
#include "core/file_util.h"
#include "launcher/local_machine.h"
#include "profiler/analytic_profile.h"

namespace trident {
namespace {

int UsageError(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 2;
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

int RunAnalytic(const ProfileOptions& o, const ModelSpec& model) {
  if (o.cluster.empty()) {
    return UsageError("--analytic needs --cluster C: the cluster whose device it computes");
  }
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(o.cluster);
  if (!cluster.ok()) return PrintError(cluster.status());
  AnalyticProfileOptions options{o.micro_batches, o.tps, o.seq_len,
                                 ValueOf(DTypeNames(), o.dtype).value_or(model.dtype), o.cps};
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

int RunComm(ProfileOptions o, const ProfileMeasurers& measure) {
  if (o.cluster.empty()) {
    return UsageError("--comm needs --cluster C: the cluster file whose measured figures it fills");
  }
  o.comm_flags.cluster = o.cluster;
  o.comm_flags.output = o.output.empty() ? "cluster.yaml" : o.output;
  o.comm_flags.device = o.device.empty() ? "cpu" : o.device;
  return measure.links(o);
}

// --efficiency: a cluster file in, a cluster file out, no model; timed on the wall clock.
int RunEfficiency(ProfileOptions o, const ProfileMeasurers& measure) {
  if (o.cluster.empty()) {
    return UsageError(
        "--efficiency needs --cluster C: the cluster file whose device.efficiency it fills");
  }
  if (!o.model.empty() || o.comm || o.analytic) {
    return UsageError("--efficiency measures the device alone: drop " + (!o.model.empty()
                                                                             ? "MODEL " + o.model
                                                                         : o.comm ? "--comm"
                                                                                  : "--analytic"));
  }
  if (o.clock != "wall") {
    return UsageError("--efficiency times a device on the wall clock: drop --clock " + o.clock);
  }
  if (o.device.empty()) o.device = "cpu";
  if (o.output.empty()) o.output = "cluster.yaml";
  return measure.efficiency(o);
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

// The --comm sweep's own flags (sizes, repeats); --cluster and -o are the command's.
void AddCommProfileFlags(CLI::App* cmd, CommProfileFlags* flags) {
  cmd->add_option("--min-bytes", flags->min_bytes, "Smallest message, e.g. 4 or 1K (--comm)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cmd->add_option("--max-bytes", flags->max_bytes, "Largest message, e.g. 64M (--comm)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cmd->add_option("--step-factor", flags->step_factor,
                  "Each message size is the previous one times this (--comm)")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "Untimed repeats per size (--comm)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--iters", flags->iters, "Timed repeats per size (--comm)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

// Replaces this process with trident-profile (beside it) given `args`: the pid and the
// environment stay, and so does the process's place in an mpirun job. Returns only when that
// fails: 1, after saying why.
int ExecProfiler(const std::vector<std::string>& args) {
  StatusOr<std::string> profiler = ProfilerBesideSelf();
  if (!profiler.ok()) return PrintError(profiler.status());
  std::vector<char*> argv = {profiler->data()};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(profiler->c_str(), argv.data());
  return PrintError(IoError("cannot run " + *profiler + ": " + std::strerror(errno)));
}

}  // namespace

std::string LayerRange(const LayerProfile& layer) {
  std::string range = std::to_string(layer.first_layer);
  if (layer.num_layers > 1) range += "-" + std::to_string(layer.first_layer + layer.num_layers - 1);
  return range;
}

int RunProfile(const ProfileOptions& o, const ProfileMeasurers& measure) {
  if (o.efficiency) return RunEfficiency(o, measure);
  if (o.comm) return RunComm(o, measure);
  if (o.model.empty()) {
    return UsageError(
        "MODEL is required: the model file to profile, e.g. trident profile "
        "configs/models/gpt-tiny.yaml --device cpu (only --comm and --efficiency run without one)");
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
  return measure.layers(measured, *model);
}

void AddProfileFlags(CLI::App* cmd, ProfileOptions* o) {
  cmd->add_option("model", o->model, "Model file (not with --comm)")->check(CLI::ExistingFile);
  cmd->add_flag("--analytic", o->analytic,
                "Compute the costs from the cluster's hardware description");
  cmd->add_flag("--comm", o->comm,
                "Measure point-to-point and collective links under mpirun and write them into "
                "a cluster file");
  cmd->add_flag("--efficiency", o->efficiency,
                "Measure this device's GEMM efficiency by size and its memory efficiency, and "
                "write them into a copy of the cluster file (device.efficiency)");
  cmd->add_option("--max-gflop", o->max_gflop,
                  "The largest GEMM --efficiency times, in GFLOP [default: 2.2 on cpu, 1100 on "
                  "cuda]")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--cluster", o->cluster, "Cluster file (--analytic, --comm, --efficiency)")
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
  cmd->add_option("--cp", o->cps,
                  "Context-parallel degrees, each timed with every --tp whose tp·cp divides the "
                  "job's ranks [default measured: 1; --analytic: powers of two up to 32 leaving "
                  "each cp rank 1,024 tokens or more]")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--seq", o->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--dtype", o->dtype,
                  "Training dtype: fp32, or bf16 (mixed precision, fp32 gradients) [default: the "
                  "model's; --efficiency: fp32 on cpu, bf16 on cuda]")
      ->check(CLI::IsMember(NamesOf(DTypeNames())));
  AddMeasureFlags(cmd, o);
  cmd->add_option("-o,--output", o->output,
                  "File to write [default: profile.yaml; cluster.yaml with --comm or "
                  "--efficiency]");
  AddCommProfileFlags(cmd, &o->comm_flags);
}

void AddProfileCommand(CLI::App& app, const std::vector<std::string>& command_line,
                       int* exit_code) {
  auto o = std::make_shared<ProfileOptions>();
  CLI::App* cmd = app.add_subcommand("profile", kProfileDescription);
  AddProfileFlags(cmd, o.get());
  // trident-profile's arguments: those after `profile` (the app itself has no other options).
  auto at = command_line.empty()
                ? command_line.end()
                : std::find(command_line.begin() + 1, command_line.end(), "profile");
  std::vector<std::string> args(at == command_line.end() ? at : at + 1, command_line.end());
  ProfileMeasurers measure{
      .layers = [args](const ProfileOptions&, const ModelSpec&) { return ExecProfiler(args); },
      .links = [args](const ProfileOptions&) { return ExecProfiler(args); },
      .efficiency = [args](const ProfileOptions&) { return ExecProfiler(args); }};
  cmd->callback([o, measure, exit_code] { *exit_code = RunProfile(*o, measure); });
}

}  // namespace trident
