// Timings for a device's efficiency constants (profiler/efficiency_fit.h), taken with the
// runtime's own Compute backend: square GEMMs of a ladder of sizes, and a memory-bound pass
// (Scale in place over a buffer much larger than any cache: it reads and writes every byte).
//
// Each sample times enough back-to-back calls to last at least min_sample_ms (a GPU kernel of
// a few microseconds is timed over many calls, not against one synchronization), bracketed by
// Synchronize; the sample is the time per call. Samples repeat as `repeats` says, its warm-up
// left out. Wall-clock time: the figures are a device's speed, not one thread's share of it.
// Thread-safety: one thread at a time per Compute.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "profiler/efficiency_fit.h"
#include "profiler/repeat_policy.h"
#include "runtime/compute/compute.h"

namespace trident {

struct EfficiencyBenchOptions {
  std::vector<int64_t> gemm_sizes;  // m = n = k of each product; each >= 1
  ElementType type = ElementType::kFp32;
  int64_t memory_bytes = int64_t{256} << 20;  // the memory-bound pass's buffer, >= 1 element
  RepeatPolicy repeats;                       // per GEMM size, and for the memory pass
  double min_sample_ms = 1.0;
};

// The sizes a device's ladder measures: the largest product's GFLOP, the smallest m.
struct GemmLadder {
  int64_t min_m = 64;
  double max_gflop = 2.2;
};

// The default ladder and memory buffer of `device` ("cpu": m 64 to 1024, 0.0005 to 2.1 GFLOP,
// tens of milliseconds at most on one core, and 256 MiB; "cuda": m 256 to 8192, 0.03 to
// 1100 GFLOP, and 1 GiB).
GemmLadder DefaultGemmLadder(const std::string& device);
int64_t DefaultMemoryBytes(const std::string& device);

// m = n = k from ladder.min_m, each √2 times the one before rounded to a multiple of 16, while
// 2·m³ / 1e9 <= ladder.max_gflop (a doubling of GFLOP every two sizes). Example {64, 2.2}:
// 64, 96, 128, 176, 256, 368, 512, 720, 1024. Empty when even min_m is above max_gflop.
std::vector<int64_t> GemmSizes(const GemmLadder& ladder);

// Called after each measurement: `what` it was, `done` of `total`.
using EfficiencyProgressFn = std::function<void(const std::string& what, int done, int total)>;

// The samples of every size of options.gemm_sizes and of the memory pass, on `compute`.
// REQUIRES: compute.Supports(options.type); options.repeats.Validate() ok.
EfficiencySamples MeasureEfficiency(Compute& compute, const EfficiencyBenchOptions& options,
                                    const EfficiencyProgressFn& progress = nullptr);

}  // namespace trident
