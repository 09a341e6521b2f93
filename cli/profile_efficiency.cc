// trident profile --efficiency, as trident-profile runs it: the request checked, the device
// timed, the fit printed and written into a copy of the cluster file.
#include "cli/profile_efficiency.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/format.h"
#include "core/file_util.h"
#include "core/launcher_env.h"
#include "core/yaml_io.h"
#include "profiler/efficiency_bench.h"
#include "runtime/compute/compute_factory.h"

namespace trident {
namespace {

// The dtype timed: --dtype, else what the backend trains in (the CPU backend computes in
// fp32 alone and widens bf16, which would time the widening; GPUs train in bf16).
StatusOr<DType> TimedDType(const ProfileOptions& o) {
  const std::string name = !o.dtype.empty() ? o.dtype : o.device == "cuda" ? "bf16" : "fp32";
  const DType dtype = ValueOf(DTypeNames(), name).value_or(DType::kFp32);
  if (o.device == "cpu" && dtype != DType::kFp32) {
    return InvalidArgument("--dtype " + name +
                           ": the CPU backend computes in fp32 (it widens bf16 to fp32); use "
                           "--dtype fp32 or leave it out");
  }
  return dtype;
}

StatusOr<EfficiencyBenchOptions> BenchOptions(const ProfileOptions& o, DType dtype) {
  EfficiencyBenchOptions options;
  GemmLadder ladder = DefaultGemmLadder(o.device);
  if (o.max_gflop > 0) ladder.max_gflop = o.max_gflop;
  options.gemm_sizes = GemmSizes(ladder);
  if (options.gemm_sizes.empty()) {
    const double m = static_cast<double>(ladder.min_m);
    return InvalidArgument("--max-gflop " + FormatDouble(o.max_gflop) +
                           " is below the smallest GEMM timed on " + o.device + " (m=n=k " +
                           std::to_string(ladder.min_m) + ", " + FormatDouble(2 * m * m * m / 1e9) +
                           " GFLOP); raise it");
  }
  options.type = ElementTypeOf(dtype);
  options.memory_bytes = DefaultMemoryBytes(o.device);
  options.repeats.budget_ms = o.time_budget_s * 1000;
  options.repeats.max_repeats = o.max_repeats;
  options.repeats.min_repeats = std::min(options.repeats.min_repeats, o.max_repeats);
  TRIDENT_RETURN_IF_ERROR(options.repeats.Validate());
  return options;
}

// What is measured, on what, against which figures: everything a bad request can fail on is
// checked here, before any timing.
struct Request {
  ClusterSpec cluster;
  DType dtype = DType::kFp32;
  EfficiencyBenchOptions bench;
};

StatusOr<Request> CheckRequest(const ProfileOptions& o) {
  if (LaunchedWorldSize().value_or(1) > 1) {
    return InvalidArgument("--efficiency times one device: run it without mpirun");
  }
  Request r;
  TRIDENT_ASSIGN_OR_RETURN(r.cluster, LoadClusterSpec(o.cluster));
  TRIDENT_ASSIGN_OR_RETURN(r.dtype, TimedDType(o));
  TRIDENT_RETURN_IF_ERROR(CheckDatasheet(r.cluster.device, r.dtype, o.cluster));
  TRIDENT_ASSIGN_OR_RETURN(r.bench, BenchOptions(o, r.dtype));
  return r;
}

// "5.2 us" below a millisecond, "15.281 ms" above.
std::string MedianText(double seconds) {
  const double ms = seconds * 1e3;
  return ms < 1 ? FormatFixed(ms * 1e3, 1) + " us" : FormatFixed(ms, 3) + " ms";
}

void PrintFit(const EfficiencyFit& fit, const Request& r, const ProfileOptions& o) {
  TextTable table({"m=n=k", "GFLOP", "samples", "median", "TFLOP/s", "fraction"});
  for (size_t i = 0; i < fit.gemm.size(); ++i) {
    const GemmMedian& g = fit.gemm[i];
    table.AddRow({std::to_string(r.bench.gemm_sizes[i]), FormatFixed(g.gflop, 4),
                  std::to_string(g.samples), MedianText(g.median_seconds), FormatFixed(g.tflops, 4),
                  FormatFixed(g.fraction, 3)});
  }
  const DeviceSpec& device = r.cluster.device;
  std::cout << "\n"
            << table.ToString() << "\nmemory: in-place scale of "
            << FormatBytes(static_cast<double>(r.bench.memory_bytes)) << ", median "
            << FormatFixed(fit.memory_median_seconds * 1e3, 3) << " ms, "
            << FormatFixed(fit.memory_gb_per_s, 2)
            << " GB/s = " << FormatFixed(fit.efficiency.memory, 3)
            << " of device.memory_bw_gb_per_s " << FormatDouble(device.memory_bw_gb_per_s)
            << "\nclock: " << FormatDouble(fit.efficiency.clock) << ", kept from " << o.cluster
            << " (a short run goes at the boost clock; the sustained clock needs hours of load)\n";
}

}  // namespace

int RunEfficiencyProfile(const ProfileOptions& o) {
  StatusOr<std::unique_ptr<Compute>> compute =
      MakeCompute({.device = o.device, .threads = o.threads});
  if (!compute.ok()) return PrintError(compute.status());
  StatusOr<Request> r = CheckRequest(o);
  if (!r.ok()) return PrintError(r.status());
  if (!(*compute)->Supports(r->bench.type)) {
    return PrintError(InvalidArgument("--dtype " + DTypeName(r->dtype) + ": " + o.device +
                                      " has no kernels for it; use --dtype bf16 or fp32"));
  }
  const double peak = r->cluster.device.peak_tflops.at(r->dtype);
  std::cout << "measuring " << (*compute)->Describe() << ": " << r->bench.gemm_sizes.size()
            << " GEMM sizes in " << DTypeName(r->dtype) << " against " << o.cluster
            << "'s device.peak_tflops." << DTypeName(r->dtype) << " " << FormatDouble(peak)
            << ", and a memory-bound pass\n";
  const EfficiencySamples samples =
      MeasureEfficiency(**compute, r->bench, [](const std::string& what, int done, int total) {
        std::cerr << "efficiency " << done << "/" << total << ": " << what << "\n";
      });
  StatusOr<EfficiencyFit> fit =
      FitDeviceEfficiency(samples, r->cluster.device, r->dtype, o.cluster);
  if (!fit.ok()) return PrintError(fit.status());
  PrintFit(*fit, *r, o);
  ClusterSpec out = r->cluster;
  out.device.efficiency = RoundedForFile(fit->efficiency);
  if (Status s = out.Validate(); !s.ok()) return PrintError(s);
  if (Status s = WriteFileAtomic(o.output, ClusterSpecToYaml(out)); !s.ok()) return PrintError(s);
  std::cout << "\nwrote " << o.output << ": " << o.cluster << " with device.efficiency measured ("
            << out.device.efficiency.gemm.size() << " GEMM points, memory "
            << FormatDouble(out.device.efficiency.memory) << ")\n";
  return 0;
}

}  // namespace trident
