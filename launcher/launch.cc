#include "launcher/launch.h"

#include <filesystem>

#include "launcher/mpirun_command.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// --oversubscribe when asked, or when this machine runs more threads than it has cores (Open
// MPI would refuse to start more ranks than cores); the warning says timings mean little.
void DecideOversubscribe(const LaunchRequest& request, const LocalMachine& machine,
                         LaunchSetup* setup) {
  setup->oversubscribe = request.oversubscribe;
  if (!TooFewCores(LocalRanks(setup->placement, machine), setup->threads, machine)) return;
  std::string what = Str(LocalRanks(setup->placement, machine)) + " ranks x " +
                     Str(setup->threads) + " threads on this machine's " + Str(machine.cores) +
                     " cores";
  if (!setup->oversubscribe) {
    setup->oversubscribe = true;
    what += ": adding --oversubscribe";
  }
  setup->warnings.push_back(what + "; ranks share cores, so step times will not be meaningful");
}

void NoteLocalNodes(const LaunchRequest& request, LaunchSetup* setup) {
  size_t nodes = PlanNodeSizes(setup->plan).size();
  if (!setup->placement.local || nodes <= 1) return;
  setup->warnings.push_back(request.plan_path + " was planned for " +
                            Str(static_cast<int64_t>(nodes)) + " nodes of " +
                            Str(setup->plan.devices_per_node) +
                            " devices; all its ranks run on this machine (use --hostfile or "
                            "--hosts to spread them)");
}

}  // namespace

std::string AbsolutePlanPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

bool TooFewCores(int local_ranks, int threads, const LocalMachine& machine) {
  return local_ranks * threads > machine.cores;
}

std::vector<std::string> LocalMpirunCommand(int ranks, int threads,
                                            std::vector<std::string> program,
                                            const LocalMachine& machine) {
  MpirunOptions options;
  options.program = std::move(program);
  options.threads = threads;
  options.allow_run_as_root = machine.root;
  options.oversubscribe = TooFewCores(ranks, threads, machine);
  return MpirunCommand(PlaceLocally(ranks), options);
}

int LocalRanks(const Placement& placement, const LocalMachine& machine) {
  if (placement.local) return placement.NumRanks();
  int ranks = 0;
  for (const HostRanks& host : placement.hosts) {
    if (IsLocalHost(host.host, machine)) ranks += host.num_ranks;
  }
  return ranks;
}

StatusOr<LaunchSetup> PrepareLaunch(const LaunchRequest& request, const LocalMachine& machine) {
  LaunchSetup setup;
  TRIDENT_ASSIGN_OR_RETURN(setup.plan, LoadPlan(request.plan_path));
  if (request.hosts.empty()) {
    if (request.np_check) {
      return InvalidArgument("--np-check compares the plan with --hostfile or --hosts; give one");
    }
    setup.placement = PlaceLocally(setup.plan.devices);
  } else {
    TRIDENT_ASSIGN_OR_RETURN(setup.placement, PlaceRanks(setup.plan, request.plan_path,
                                                         request.hosts, request.np_check));
  }
  TRIDENT_RETURN_IF_ERROR(CheckPlacement(setup.plan.MakeRankMap(), setup.placement));
  TRIDENT_ASSIGN_OR_RETURN(setup.threads, WorkerThreads(request.worker_args));
  DecideOversubscribe(request, machine, &setup);
  NoteLocalNodes(request, &setup);
  MpirunOptions options;
  options.mpirun = request.mpirun;
  options.program = {request.worker, AbsolutePlanPath(request.plan_path)};
  options.program.insert(options.program.end(), request.worker_args.begin(),
                         request.worker_args.end());
  options.threads = setup.threads;
  options.allow_run_as_root = machine.root;
  options.oversubscribe = setup.oversubscribe;
  setup.command = MpirunCommand(setup.placement, options);
  return setup;
}

}  // namespace trident
