#include "profiler/efficiency_fit.h"

#include <algorithm>
#include <cmath>

#include "core/text_format.h"
#include "core/yaml_io.h"
#include "profiler/repeat_policy.h"

namespace trident {
namespace {

bool Positive(double value) { return std::isfinite(value) && value > 0.0; }

// A rate in a message: four decimals below 1 ("0.0821"), two below 100, none above ("312").
std::string Figure(double value) { return FormatFixed(value, value < 1 ? 4 : value < 100 ? 2 : 0); }

Status CheckSamples(const EfficiencySamples& samples) {
  if (samples.gemm.empty()) {
    return InvalidArgument("no GEMM timings to fit: time at least one GEMM size");
  }
  if (samples.memory_seconds.empty() || !Positive(samples.memory_bytes)) {
    return InvalidArgument("no memory-bound timings to fit: time at least one pass of some bytes");
  }
  for (const GemmSample& s : samples.gemm) {
    if (!Positive(s.gflop) || !Positive(s.seconds)) {
      return InvalidArgument("a GEMM timing of " + FormatDouble(s.gflop) + " GFLOP in " +
                             FormatDouble(s.seconds) + " s: both must be positive");
    }
  }
  for (double seconds : samples.memory_seconds) {
    if (!Positive(seconds)) {
      return InvalidArgument("a memory-bound timing of " + FormatDouble(seconds) +
                             " s: timings must be positive");
    }
  }
  return Status::Ok();
}

// The samples pooled by size (equal gflop), in ascending gflop.
std::vector<std::pair<double, std::vector<double>>> PoolBySize(std::vector<GemmSample> samples) {
  std::sort(samples.begin(), samples.end(),
            [](const GemmSample& a, const GemmSample& b) { return a.gflop < b.gflop; });
  std::vector<std::pair<double, std::vector<double>>> pooled;
  for (const GemmSample& s : samples) {
    if (pooled.empty() || pooled.back().first != s.gflop) pooled.push_back({s.gflop, {}});
    pooled.back().second.push_back(s.seconds);
  }
  return pooled;
}

// Each size's median against `peak_tflops`; the fastest size's rate names the fix when any
// beats the peak.
StatusOr<std::vector<GemmMedian>> FitGemm(const std::vector<GemmSample>& samples,
                                          double peak_tflops, DType dtype,
                                          const std::string& file) {
  std::vector<GemmMedian> sizes;
  for (const auto& [gflop, seconds] : PoolBySize(samples)) {
    GemmMedian m{.gflop = gflop,
                 .median_seconds = Median(seconds),
                 .samples = static_cast<int>(seconds.size())};
    m.tflops = gflop / m.median_seconds / 1e3;
    m.fraction = m.tflops / peak_tflops;
    sizes.push_back(m);
  }
  const GemmMedian& fastest = *std::max_element(
      sizes.begin(), sizes.end(),
      [](const GemmMedian& a, const GemmMedian& b) { return a.tflops < b.tflops; });
  if (fastest.fraction <= 1.0) return sizes;
  const std::string key = "device.peak_tflops." + DTypeName(dtype);
  return InvalidArgument(file + ": " + key + " is " + Figure(peak_tflops) + " TFLOP/s, but a " +
                         Figure(fastest.gflop) + " GFLOP GEMM ran at " + Figure(fastest.tflops) +
                         " TFLOP/s on this device: raise " + key +
                         " to the device's peak (at least " + Figure(fastest.tflops) + ")");
}

// Rounds `value` (> 0) to `digits` significant digits.
double RoundedSignificant(double value, int digits) {
  const int decimals = digits - 1 - static_cast<int>(std::floor(std::log10(value)));
  return RoundedTo(value, decimals);
}

}  // namespace

Status CheckDatasheet(const DeviceSpec& device, DType dtype, const std::string& cluster_file) {
  const std::string key = "device.peak_tflops." + DTypeName(dtype);
  auto it = device.peak_tflops.find(dtype);
  if (it == device.peak_tflops.end() || !Positive(it->second)) {
    return InvalidArgument(cluster_file + ": " + key + " is missing: add the device's dense " +
                           DTypeName(dtype) +
                           " peak in TFLOP/s (its datasheet), or measure another --dtype");
  }
  if (!Positive(device.memory_bw_gb_per_s)) {
    return InvalidArgument(cluster_file +
                           ": device.memory_bw_gb_per_s must be positive: give the datasheet's "
                           "memory bandwidth in GB/s");
  }
  return Status::Ok();
}

StatusOr<EfficiencyFit> FitDeviceEfficiency(const EfficiencySamples& samples,
                                            const DeviceSpec& device, DType dtype,
                                            const std::string& cluster_file) {
  TRIDENT_RETURN_IF_ERROR(CheckSamples(samples));
  TRIDENT_RETURN_IF_ERROR(CheckDatasheet(device, dtype, cluster_file));
  const double peak_tflops = device.peak_tflops.at(dtype);
  EfficiencyFit fit;
  TRIDENT_ASSIGN_OR_RETURN(fit.gemm, FitGemm(samples.gemm, peak_tflops, dtype, cluster_file));
  fit.memory_median_seconds = Median(samples.memory_seconds);
  fit.memory_gb_per_s = samples.memory_bytes / fit.memory_median_seconds / 1e9;
  if (fit.memory_gb_per_s > device.memory_bw_gb_per_s) {
    return InvalidArgument(cluster_file + ": device.memory_bw_gb_per_s is " +
                           Figure(device.memory_bw_gb_per_s) +
                           " GB/s, but a memory-bound pass moved " + Figure(fit.memory_gb_per_s) +
                           " GB/s on this device: raise device.memory_bw_gb_per_s to the "
                           "device's bandwidth (at least " +
                           Figure(fit.memory_gb_per_s) + ")");
  }
  fit.efficiency.gemm.clear();
  for (const GemmMedian& m : fit.gemm) fit.efficiency.gemm.push_back({m.gflop, m.fraction});
  fit.efficiency.clock = device.efficiency.clock;
  fit.efficiency.memory = fit.memory_gb_per_s / device.memory_bw_gb_per_s;
  return fit;
}

DeviceEfficiency RoundedForFile(DeviceEfficiency efficiency) {
  for (EfficiencyPoint& p : efficiency.gemm) {
    p.gflop = RoundedSignificant(p.gflop, 4);
    p.fraction = RoundedSignificant(p.fraction, 4);
  }
  efficiency.memory = RoundedSignificant(efficiency.memory, 4);
  return efficiency;
}

}  // namespace trident
