#include "launcher/run_flow.h"

#include <filesystem>
#include <utility>

#include "core/digest.h"
#include "launcher/launch.h"
#include "launcher/mpirun_command.h"

namespace trident {
namespace {

std::string Join(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

// A cached file named by the digest of everything it depends on.
std::string CachePath(const RunFlowOptions& o, const std::string& kind, const std::string& key) {
  return o.cache + "/" + kind + "-" + ContentDigest(key).substr(0, 16) + ".yaml";
}

// `program` on `ranks` ranks of this machine: mpirun for more than one.
std::vector<std::string> OnRanks(int ranks, int threads, std::vector<std::string> program,
                                 const LocalMachine& machine) {
  if (ranks == 1) return program;
  return LocalMpirunCommand(ranks, threads, std::move(program), machine);
}

// One step: its command printed, then run. False, with `result` set, when it failed.
bool RunStep(const std::string& title, const std::vector<std::string>& argv, RunFlowSteps& steps,
             std::ostream& out, RunFlowResult* result) {
  out << "\n" << title << "\n  " << ShellQuote(argv) << "\n" << std::flush;
  StatusOr<int> exit_code = steps.Run(argv);
  if (!exit_code.ok()) {
    *result = {1, exit_code.status().message(), result->files};
  } else if (*exit_code != 0) {
    *result = {*exit_code, title + " failed (exit status " + std::to_string(*exit_code) + ")",
               result->files};
  }
  return result->exit_code == 0;
}

bool ProfileLayers(const RunFlowOptions& o, const LocalMachine& machine, RunFlowSteps& steps,
                   std::ostream& out, RunFlowResult* result) {
  result->files.profile = LayerProfileCachePath(o);
  if (std::filesystem::exists(result->files.profile)) {
    out << "\n[1/4] layer profile: reusing " << result->files.profile
        << " (same model, device, build and threads)\n";
    return true;
  }
  return RunStep("[1/4] layer profile: measuring on this machine",
                 OnRanks(o.devices, o.threads, LayerProfileArgv(o, result->files.profile), machine),
                 steps, out, result);
}

bool ProfileLinks(const RunFlowOptions& o, const LocalMachine& machine, RunFlowSteps& steps,
                  std::ostream& out, RunFlowResult* result) {
  if (o.devices == 1) {
    result->files.cluster = o.cluster;
    out << "\n[2/4] link profile: one rank, no links to measure\n";
    return true;
  }
  result->files.cluster = LinkProfileCachePath(o);
  if (std::filesystem::exists(result->files.cluster)) {
    out << "\n[2/4] link profile: reusing " << result->files.cluster << "\n";
    return true;
  }
  return RunStep("[2/4] link profile: point-to-point and collectives under mpirun",
                 OnRanks(o.devices, 1, LinkProfileArgv(o, result->files.cluster), machine), steps,
                 out, result);
}

}  // namespace

std::string DefaultRunCacheDir(const char* xdg_cache_home, const char* home) {
  if (xdg_cache_home != nullptr && *xdg_cache_home != '\0') {
    return std::string(xdg_cache_home) + "/trident";
  }
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/trident";
}

// The profile's content is part of the key: a profile cached before its entries included
// sequence parallelism ("with sp") has none to plan it with.
std::string LayerProfileCachePath(const RunFlowOptions& o) {
  const std::string key = o.model_text + "|seq " + std::to_string(o.seq_len) + "|mb " +
                          Join(o.micro_batches) + "|tp " + Join(o.profile_tps) + " with sp|cp " +
                          Join(o.profile_cps) + "|threads " + std::to_string(o.threads) +
                          "|dtype " + o.dtype + "|device " + o.device + "|" + o.machine;
  return CachePath(o, "profile-" + o.model_name, key);
}

std::string LinkProfileCachePath(const RunFlowOptions& o) {
  const std::string key = o.cluster_text + "|ranks " + std::to_string(o.devices) + "|device " +
                          o.device + "|" + o.machine;
  return CachePath(o, "cluster", key);
}

std::vector<std::string> LayerProfileArgv(const RunFlowOptions& o, const std::string& output) {
  std::vector<std::string> argv = {o.trident, "profile", o.model, "--device",
                                   o.device,  "-o",      output};
  argv.insert(argv.end(), {"--micro-batch", Join(o.micro_batches), "--tp", Join(o.profile_tps),
                           "--cp", Join(o.profile_cps), "--threads", std::to_string(o.threads)});
  if (o.seq_len > 0) argv.insert(argv.end(), {"--seq", std::to_string(o.seq_len)});
  if (!o.dtype.empty()) argv.insert(argv.end(), {"--dtype", o.dtype});
  return argv;
}

std::vector<std::string> LinkProfileArgv(const RunFlowOptions& o, const std::string& output) {
  return {o.trident, "profile",     "--comm", "--device", o.device, "--cluster",
          o.cluster, "--max-bytes", "4M",     "-o",       output};
}

std::vector<std::string> PlanArgv(const RunFlowOptions& o, const RunFlowFiles& files) {
  std::vector<std::string> argv = {o.trident,       "plan",        "--model",   o.model,
                                   "--cluster",     files.cluster, "--profile", files.profile,
                                   "--dp-sharding", o.dp_sharding, "-o",        files.plan};
  argv.insert(argv.end(), {"--devices", std::to_string(o.devices), "--global-batch",
                           std::to_string(o.global_batch)});
  if (o.seq_len > 0) argv.insert(argv.end(), {"--seq", std::to_string(o.seq_len)});
  if (!o.dtype.empty()) argv.insert(argv.end(), {"--dtype", o.dtype});
  for (const std::string& fix : o.fix) argv.insert(argv.end(), {"--fix", fix});
  for (const std::string& s : o.schedules) argv.insert(argv.end(), {"--schedule", s});
  argv.insert(argv.end(), {"--sequence-parallel", o.sequence_parallel});
  return argv;
}

std::vector<std::string> TrainWorkerArgs(const RunFlowOptions& o) {
  std::vector<std::string> args = {
      "--steps",   std::to_string(o.steps),  "--out", o.out, "--device", o.device,
      "--threads", std::to_string(o.threads)};
  if (o.steps >= 2) args.insert(args.end(), {"--trace-steps", "2"});
  if (!o.data.empty()) args.insert(args.end(), {"--data", o.data});
  args.insert(args.end(), o.worker_args.begin(), o.worker_args.end());
  return args;
}

RunFlowResult RunFlow(const RunFlowOptions& o, const LocalMachine& machine, RunFlowSteps& steps,
                      std::ostream& out) {
  RunFlowResult result;
  result.files.plan = o.out + "/plan.yaml";
  if (!ProfileLayers(o, machine, steps, out, &result) ||
      !ProfileLinks(o, machine, steps, out, &result) ||
      !RunStep("[3/4] plan", PlanArgv(o, result.files), steps, out, &result)) {
    return result;
  }
  out << "\n[4/4] train: trident launch " << result.files.plan << "\n" << std::flush;
  result.exit_code = steps.Train(result.files.plan, TrainWorkerArgs(o), o.time_limit_s);
  return result;
}

}  // namespace trident
