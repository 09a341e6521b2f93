// The device efficiency constants of a cluster file (core/cluster.h DeviceEfficiency) fitted
// from timings: GEMMs of several sizes and a memory-bound pass, each timed several times.
// Pure functions of the samples, so the fit is tested on synthetic timings; the timings
// themselves come from profiler/efficiency_bench.h.
//
// Fit, per GEMM size (samples of equal gflop are pooled, in any order):
//   fraction = gflop · 1e9 / median seconds / (peak_tflops · 1e12)
// one curve point {gflop, fraction} per size, in ascending gflop; and for the memory pass
//   memory = bytes / median seconds / (memory_bw_gb_per_s · 1e9).
// Example: a 2.147 GFLOP product (m = n = k = 1024) whose median is 20 ms on a device of
// 0.2 TFLOP/s ran at 0.107 TFLOP/s: fraction 0.537.
// A median above the datasheet figure is an error, never clipped: the cluster file
// understates the device, and every plan made from it would be off.
#pragma once

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/dtype.h"
#include "core/status.h"

namespace trident {

// One timed run of one GEMM of `gflop` GFLOP (2·m·n·k / 1e9): `seconds` per product.
struct GemmSample {
  double gflop = 0.0;
  double seconds = 0.0;
};

struct EfficiencySamples {
  std::vector<GemmSample> gemm;
  double memory_bytes = 0.0;           // bytes one memory-bound pass reads and writes
  std::vector<double> memory_seconds;  // one per timed pass
};

// The figures of one GEMM size: the median of its samples and what it gives.
struct GemmMedian {
  double gflop = 0.0;
  double median_seconds = 0.0;
  int samples = 0;
  double tflops = 0.0;    // achieved: gflop / median_seconds / 1e3
  double fraction = 0.0;  // tflops / peak_tflops
};

struct EfficiencyFit {
  std::vector<GemmMedian> gemm;  // ascending gflop, one per size
  double memory_median_seconds = 0.0;
  double memory_gb_per_s = 0.0;  // achieved
  // The curve from `gemm`, memory = memory_gb_per_s / memory_bw_gb_per_s, and the device's
  // own clock fraction (a short measurement cannot see the sustained clock).
  DeviceEfficiency efficiency;
};

// Ok when `device` has the figures a fit for `dtype` divides by: a positive
// peak_tflops.<dtype> and memory_bw_gb_per_s; otherwise InvalidArgument naming `cluster_file`,
// the key and the fix.
Status CheckDatasheet(const DeviceSpec& device, DType dtype, const std::string& cluster_file);

// The fit of `samples` against `device`'s datasheet figures for `dtype`. `cluster_file` names
// the file the device came from, for the errors. InvalidArgument, naming the file, the key and
// the fix, when: there are no GEMM samples or no memory samples; a sample is not positive;
// CheckDatasheet fails; a size's median beats
// device.peak_tflops.<dtype>, or the memory pass's beats device.memory_bw_gb_per_s (the
// message gives the measured rate).
StatusOr<EfficiencyFit> FitDeviceEfficiency(const EfficiencySamples& samples,
                                            const DeviceSpec& device, DType dtype,
                                            const std::string& cluster_file);

// `efficiency` with each curve point's gflop and fraction and the memory fraction rounded to
// four significant digits, as a cluster file writes them (a measurement has no more). Points
// stay ascending when their sizes differ by more than 0.1%.
DeviceEfficiency RoundedForFile(DeviceEfficiency efficiency);

}  // namespace trident
