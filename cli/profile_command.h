// trident profile: its flags, its checks of a request, and the analytic profile, shared by the
// `trident profile` subcommand (cli/profile_command.cc) and the trident-profile binary
// (cli/profile_main.cc). `trident` links no device library: it computes analytic profiles
// itself and runs trident-profile, beside it, for the measured ones (MODEL --device, --comm).
// trident-profile takes exactly the arguments that follow `trident profile`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/profile_comm.h"
#include "core/model_spec.h"
#include "core/profile.h"
#include "profiler/measured_options.h"

namespace trident {

struct ProfileOptions {
  std::string model;
  std::string cluster;
  bool analytic = false;
  bool comm = false;
  bool efficiency = false;
  double max_gflop = 0.0;  // --efficiency: the largest GEMM; 0: the device's default ladder
  std::string device;      // empty: cpu, unless --analytic
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> tps;
  std::vector<int> cps;  // empty: 1 measured; --analytic: DefaultContextDegrees
  int64_t seq_len = 0;
  std::string dtype;
  int threads = 1;
  std::string clock = "wall";
  double time_budget_s = 2.0;
  int max_repeats = RepeatPolicy().max_repeats;
  int passes = MeasuredProfileOptions().passes;
  std::string output;  // empty: profile.yaml, or cluster.yaml with --comm or --efficiency
  CommProfileFlags comm_flags;
};

// What runs a measurement: in trident-profile the measurement itself, in `trident` the
// trident-profile binary. Each returns the process exit code.
struct ProfileMeasurers {
  // MODEL --device: `o.device` is set (cpu when the flag was left out); `model` is loaded.
  std::function<int(const ProfileOptions& o, const ModelSpec& model)> layers;
  // --comm: `o.comm_flags.cluster` and `.output` are set from --cluster and -o.
  std::function<int(const ProfileOptions& o)> links;
  // --efficiency: `o.cluster` is set; `o.device` is set (cpu when the flag was left out).
  std::function<int(const ProfileOptions& o)> efficiency;
};

// The profile command's description and flags, registered on `cmd`, stored in `*o`.
inline constexpr const char* kProfileDescription =
    "Write a model's per-layer cost profile: measured on this machine (--device cpu; "
    "under mpirun for --tp > 1) or computed (--analytic --cluster C); or, with --comm, "
    "measure the links; or, with --efficiency, the device's GEMM and memory efficiency";
void AddProfileFlags(CLI::App* cmd, ProfileOptions* o);

// Checks the request (usage errors exit 2, naming the flag), then computes an analytic
// profile or hands a measurement to `measure`. Returns the exit code.
int RunProfile(const ProfileOptions& o, const ProfileMeasurers& measure);

// "1" or "1-12": the layers a profile's layer group covers.
std::string LayerRange(const LayerProfile& layer);

}  // namespace trident
