// `trident run`'s flow on this machine, as data and one sequencing function:
//   [1/4] the layer profile (`trident profile MODEL --device D`, under mpirun for several
//         ranks), or a cached one;
//   [2/4] the link profile (`trident profile --comm --device D` under mpirun: MPI links for
//         cpu, NCCL for cuda), or a cached one, or none for one rank;
//   [3/4] the plan (`trident plan`);
//   [4/4] training (`trident launch PLAN -- --device D worker options`).
// D is the device every step measures and trains on: cpu, or cuda (one GPU per rank).
// Every command is an argv vector, never a string for a shell. A cached profile is a file in
// the cache folder named by the digest of everything it depends on (the input file's text, the
// flags that shape it, the machine and trident's build), so a changed input is a miss, never a
// stale hit; the profile commands write atomically, so a present file is whole.
// The steps run through a RunFlowSteps, so a test can record them and fail any of them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "launcher/local_machine.h"

namespace trident {

struct RunFlowOptions {
  std::string trident;         // the trident binary each step's command runs
  std::string model;           // model file
  std::string model_name;      // the model's name: part of its cached profile's file name
  std::string model_text;      // the model file's text: part of its profile's cache key
  std::string device = "cpu";  // "cpu" or "cuda": where every step measures and trains
  std::string cluster;         // cluster file describing this machine
  std::string cluster_text;    // its text: part of the link profile's cache key
  int devices = 1;             // ranks to train on
  int64_t global_batch = 16;
  int64_t steps = 50;
  int64_t seq_len = 0;  // 0: the model's max_seq_len
  std::string dtype;    // the profile's and the plan's --dtype; empty: the model's
  std::string data;     // empty: the worker's default corpus
  std::vector<int> micro_batches = {1, 2, 4};
  std::vector<int> profile_tps = {1};      // tp degrees the layer profile measures
  std::vector<int> profile_cps = {1};      // cp degrees the layer profile measures
  int threads = 1;                         // compute threads per rank
  std::vector<std::string> fix;            // the planner's --fix values
  std::vector<std::string> schedules;      // the planner's --schedule values
  std::string sequence_parallel = "auto";  // the planner's --sequence-parallel
  // The planner's --dp-sharding: by default the levels whose predicted step time the runtime
  // carries out (gradients runs too, but its per-layer reduce-scatter waits where the model
  // overlaps it: runtime/train/README.md).
  std::string dp_sharding = "none,optimizer";
  std::string out = "run";  // folder of the plan, metrics, summary and trace
  std::string cache;        // folder of cached profiles
  std::string machine;      // this machine's CPU (and GPUs) and trident's build: in every cache key
  double time_limit_s = 0;  // 0: none
  std::vector<std::string> worker_args;  // more trident-worker options
};

// What the flow runs. The real one supervises child processes (cli/run_command.cc).
class RunFlowSteps {
 public:
  virtual ~RunFlowSteps() = default;
  // Runs `argv` to its end: its exit status, or why it could not start.
  virtual StatusOr<int> Run(const std::vector<std::string>& argv) = 0;
  // `trident launch plan -- worker_args` with `time_limit_s` (0: none): its exit status.
  virtual int Train(const std::string& plan, const std::vector<std::string>& worker_args,
                    double time_limit_s) = 0;
};

// Where a run's files are.
struct RunFlowFiles {
  std::string profile;  // the layer profile (cached or new)
  std::string cluster;  // the cluster planned on: measured links, or --cluster for one rank
  std::string plan;     // out/plan.yaml
};

struct RunFlowResult {
  int exit_code = 0;  // 0: every step succeeded; else the failing step's status (1: no start)
  std::string error;  // why the flow stopped, when a step failed without saying so itself
  RunFlowFiles files;
};

// $XDG_CACHE_HOME/trident when set and not empty, else $HOME/.cache/trident, else
// /tmp/.cache/trident (a null pointer: the variable is unset).
std::string DefaultRunCacheDir(const char* xdg_cache_home, const char* home);

// The cached files' paths: cache/profile-MODEL-DIGEST.yaml and cache/cluster-DIGEST.yaml.
std::string LayerProfileCachePath(const RunFlowOptions& o);
std::string LinkProfileCachePath(const RunFlowOptions& o);

// The steps' commands, on one process; the profiles run under mpirun for several ranks.
std::vector<std::string> LayerProfileArgv(const RunFlowOptions& o, const std::string& output);
std::vector<std::string> LinkProfileArgv(const RunFlowOptions& o, const std::string& output);
std::vector<std::string> PlanArgv(const RunFlowOptions& o, const RunFlowFiles& files);
// The trident-worker options of the training step.
std::vector<std::string> TrainWorkerArgs(const RunFlowOptions& o);

// Runs the four steps in order, each announced on `out` (its command printed first); the
// profiles are reused from o.cache when there. Stops at the first step that fails. REQUIRES:
// o.out and o.cache exist.
RunFlowResult RunFlow(const RunFlowOptions& o, const LocalMachine& machine, RunFlowSteps& steps,
                      std::ostream& out);

}  // namespace trident
