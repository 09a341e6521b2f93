// trident profile --comm, as trident-profile runs it: the command around
// profiler/comm_profile.h. Every rank measures; rank 0 alone reads the cluster file, prints and
// writes.
#include "cli/profile_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>

#include "cli/format.h"
#include "core/file_util.h"
#include "core/logging.h"
#include "profiler/comm_profile.h"
#include "runtime/comm/comm_factory.h"
#include "runtime/compute/compute_factory.h"

namespace trident {
namespace {

constexpr const char* kMpirunHint =
    "run under mpirun with >= 2 ranks, e.g. mpirun -np 2 trident profile --comm --cluster C "
    "-o measured-cluster.yaml";

CommSweepOptions SweepOptions(const CommProfileFlags& f, int devices_per_node) {
  CommSweepOptions o;
  o.min_bytes = f.min_bytes;
  o.max_bytes = f.max_bytes;
  o.step_factor = f.step_factor;
  o.warmup = f.warmup;
  o.iters = f.iters;
  o.devices_per_node = devices_per_node;
  return o;
}

// The buffers' backend and the world over it. cpu: host memory over MPI. cuda: the rank's GPU
// (by its local rank), its buffers over NCCL, the small host messages of the sweep over MPI.
// The world is declared last, so it goes before the compute stream it orders its work after.
struct SweepBackend {
  std::unique_ptr<Compute> compute;
  std::unique_ptr<Comm> world;
};

StatusOr<SweepBackend> MakeSweepBackend(const std::string& device) {
  if (device != "cpu" && device != "cuda") {
    return InvalidArgument("--device " + device +
                           ": trident profile --comm measures cpu (MPI) "
                           "or cuda (NCCL) buffers");
  }
  SweepBackend b;
  TRIDENT_ASSIGN_OR_RETURN(b.compute, MakeCompute({.device = device}));
  StatusOr<std::unique_ptr<Comm>> world = MakeWorldComm(
      device == "cuda" ? "nccl" : "mpi", {.device_stream = b.compute->device_stream()});
  if (!world.ok() && device == "cpu") {
    return Status(world.status().code(), world.status().message() + "; " + kMpirunHint);
  }
  if (!world.ok()) return world.status();
  b.world = std::move(*world);
  return b;
}

// Rank 0's checks of the request before anything is measured.
StatusOr<ClusterSpec> CheckRequest(const CommProfileFlags& f, int world_size) {
  TRIDENT_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadClusterSpec(f.cluster));
  if (world_size > cluster.TotalDevices()) {
    return InvalidArgument("this job has " + std::to_string(world_size) + " ranks but " +
                           f.cluster + " describes " + std::to_string(cluster.TotalDevices()) +
                           " devices (nodes " + std::to_string(cluster.nodes) +
                           " x devices_per_node " + std::to_string(cluster.devices_per_node) +
                           "); start at most " + std::to_string(cluster.TotalDevices()) +
                           " ranks, or give a cluster file that describes this job's machines");
  }
  TRIDENT_RETURN_IF_ERROR(SweepOptions(f, cluster.devices_per_node).Validate());
  if (f.output.empty()) return InvalidArgument("-o: name the cluster file to write");
  std::filesystem::path folder = std::filesystem::path(f.output).parent_path();
  std::error_code ec;
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
    return IoError(f.output + ": the folder " + folder.string() + " does not exist; create it");
  }
  return cluster;
}

// Rank 0 checks the request and tells every rank the cluster's devices_per_node, or 0 when it
// refused the request (and printed why).
StatusOr<int> AgreeOnRequest(Comm& world, const CommProfileFlags& f, ClusterSpec* cluster) {
  std::vector<float> message = {0};
  if (world.Rank() == 0) {
    StatusOr<ClusterSpec> checked = CheckRequest(f, world.Size());
    if (checked.ok()) {
      *cluster = *checked;
      message[0] = static_cast<float>(cluster->devices_per_node);
    } else {
      std::cerr << "error: " << checked.status().message() << "\n";
    }
  }
  TRIDENT_RETURN_IF_ERROR(world.Broadcast(message, 0));
  return static_cast<int>(message[0]);
}

// The link classes follow the cluster file (world rank r on node r / devices_per_node); warns
// on rank 0 when the hosts the ranks really run on say otherwise.
Status WarnAboutPlacement(Comm& world, int devices_per_node) {
  uint64_t hash = std::hash<std::string>{}(LogContext::FromEnvironment().host);
  std::vector<float> mine = {static_cast<float>(hash & 0xffff),
                             static_cast<float>((hash >> 16) & 0xffff),
                             static_cast<float>((hash >> 32) & 0xffff)};
  std::vector<float> all(mine.size() * world.Size());
  TRIDENT_RETURN_IF_ERROR(world.AllGather(mine, all));
  if (world.Rank() != 0) return Status::Ok();
  auto same_host = [&all](int a, int b) {
    return std::equal(all.data() + 3 * a, all.data() + 3 * a + 3, all.data() + 3 * b);
  };
  for (int r = 1; r < world.Size(); ++r) {
    int first = r / devices_per_node * devices_per_node;  // first rank of r's node
    bool ok = r == first ? !same_host(r, r - 1) : same_host(r, first);
    if (ok) continue;
    std::cerr << "warning: world ranks " << (r == first ? r - 1 : first) << " and " << r
              << (r == first ? " share a host" : " run on different hosts") << ", but with "
              << devices_per_node << " devices per node (the cluster file) they are on "
              << (r == first ? "different nodes" : "one node")
              << "; link classes follow the cluster file: start " << devices_per_node
              << " ranks per host (mpirun --map-by ppr:" << devices_per_node
              << ":node) or fix devices_per_node\n";
    break;
  }
  return Status::Ok();
}

void PrintTable(const std::vector<CommPoint>& points) {
  TextTable table(
      {"collective", "link", "ranks", "bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)"});
  for (const CommPoint& p : points) {
    table.AddRow({NameOf(CollectiveNames(), p.collective), NameOf(LinkClassNames(), p.link),
                  std::to_string(p.group_size), std::to_string(p.bytes), FormatFixed(p.time_us, 2),
                  FormatFixed(p.algbw_gb_per_s, 3), FormatFixed(p.busbw_gb_per_s, 3)});
  }
  std::cout << table.ToString() << "every result checked exactly: ok\n\n";
}

void PrintFits(const std::vector<LinkFit>& fits) {
  TextTable table(
      {"collective", "link", "ranks", "alpha (us)", "beta (GB/s)", "sizes", "max fit error"});
  for (const LinkFit& f : fits) {
    const MeasuredLink& m = f.link;
    table.AddRow({NameOf(CollectiveNames(), m.collective), NameOf(LinkClassNames(), m.link),
                  std::to_string(m.group_size), FormatFixed(m.alpha_us, 3),
                  FormatFixed(m.beta_gb_per_s, 3), std::to_string(f.num_points),
                  FormatFixed(100 * f.max_error_fraction, 1) + "%"});
  }
  std::cout << "fit: time = alpha + bytes / beta (least squares, relative residuals)\n"
            << table.ToString();
}

// Rank 0: table, fit, and the cluster file, read back to prove that it loads.
int Report(const CommProfileFlags& f, const ClusterSpec& cluster,
           const std::vector<CommPoint>& points, double seconds) {
  PrintTable(points);
  std::vector<std::string> notes;
  std::vector<LinkFit> fits = FitMeasuredLinks(points, &notes);
  PrintFits(fits);
  ClusterSpec measured = WithMeasuredLinks(cluster, fits, &notes);
  for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  if (measured.measured.empty()) {
    std::cerr << "error: no link could be fitted; nothing written to " << f.output << "\n";
    return 1;
  }
  if (Status s = WriteFileAtomic(f.output, ClusterSpecToYaml(measured)); !s.ok())
    return PrintError(s);
  StatusOr<ClusterSpec> reread = LoadClusterSpec(f.output);
  if (!reread.ok() || reread->measured != measured.measured) {
    std::cerr << "error: " << f.output << " does not read back as written"
              << (reread.ok() ? "" : ": " + reread.status().message()) << "\n";
    return 1;
  }
  std::cout << "\nwrote " << f.output << ": " << measured.measured.size()
            << " measured links (measured in " << FormatFixed(seconds, 1) << " s)\n";
  return 0;
}

}  // namespace

int RunCommProfileCommand(const CommProfileFlags& flags) {
  StatusOr<SweepBackend> backend = MakeSweepBackend(flags.device);
  if (!backend.ok()) {
    std::cerr << "error: " << backend.status().message() << "\n";
    return 1;
  }
  Comm& world = *backend->world;
  if (world.Size() < 2) {
    std::cerr << "error: trident profile --comm measures the links between ranks, and this job "
                 "has one rank; "
              << kMpirunHint << "\n";
    return 1;
  }
  ClusterSpec cluster;
  StatusOr<int> devices_per_node = AgreeOnRequest(world, flags, &cluster);
  if (!devices_per_node.ok()) world.FailJob(devices_per_node.status());
  if (*devices_per_node == 0) return 1;  // rank 0 said why
  if (Status s = WarnAboutPlacement(world, *devices_per_node); !s.ok()) world.FailJob(s);
  CommSweepOptions options = SweepOptions(flags, *devices_per_node);
  if (world.Rank() == 0) {
    std::cerr << "comm: " << world.Size() << " ranks, buffers on " << backend->compute->Describe()
              << " (rank 0), over " << (flags.device == "cuda" ? "NCCL" : "MPI") << "\n";
    options.progress = [](const std::string& line) { std::cerr << "comm " << line << "\n"; };
  }
  auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<CommPoint>> points = RunCommSweep(world, *backend->compute, options);
  if (!points.ok()) world.FailJob(points.status());
  if (world.Rank() != 0) return 0;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Report(flags, cluster, *points, seconds);
}

}  // namespace trident
