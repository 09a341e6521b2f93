#include "profiler/efficiency_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"
#include "core/text_format.h"

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;
using Op = std::function<void()>;

constexpr int kMaxCallsPerSample = 1000;
constexpr int64_t kSizeMultiple = 16;

// Milliseconds `calls` back-to-back calls of `op` take, every op issued before them done.
double TimedMs(Compute& compute, const Op& op, int calls) {
  compute.Synchronize();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < calls; ++i) op();
  compute.Synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Calls per sample so that one sample lasts about `min_sample_ms`. The first call also loads
// code and picks kernels (cuBLAS heuristics); the second's time decides.
int CallsPerSample(Compute& compute, const Op& op, double min_sample_ms) {
  TimedMs(compute, op, 1);
  const double one_ms = std::max(TimedMs(compute, op, 1), 1e-6);
  return static_cast<int>(
      std::clamp(std::ceil(min_sample_ms / one_ms), 1.0, double{kMaxCallsPerSample}));
}

// Seconds per call of `op`, one figure per sample `options.repeats` asks for, warm-up left out.
std::vector<double> SecondsPerCall(Compute& compute, const Op& op,
                                   const EfficiencyBenchOptions& options) {
  const int calls = CallsPerSample(compute, op, options.min_sample_ms);
  std::vector<double> samples_ms;
  double spent_ms = 0;
  while (options.repeats.WantsMore(samples_ms, spent_ms,
                                   samples_ms.empty() ? 0.0 : Median(samples_ms))) {
    samples_ms.push_back(TimedMs(compute, op, calls));
    spent_ms += samples_ms.back();
  }
  std::vector<double> seconds;
  const int taken = static_cast<int>(samples_ms.size());
  for (int i = options.repeats.Skipped(taken); i < taken; ++i) {
    seconds.push_back(samples_ms[i] / calls / 1e3);
  }
  return seconds;
}

// The samples of one m×m by m×m product.
std::vector<GemmSample> MeasureGemm(Compute& compute, int64_t m,
                                    const EfficiencyBenchOptions& options) {
  Tensor a = compute.Allocate({m, m}, options.type);
  Tensor b = compute.Allocate({m, m}, options.type);
  Tensor c = compute.Allocate({m, m}, options.type);
  compute.Fill(0.5f, a);
  compute.Fill(0.25f, b);
  const Op op = [&] { compute.Gemm(false, false, 1.0f, a, b, 0.0f, c); };
  const double gflop =
      2.0 * static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(m) / 1e9;
  std::vector<GemmSample> samples;
  for (double seconds : SecondsPerCall(compute, op, options)) samples.push_back({gflop, seconds});
  return samples;
}

// Scale in place by 1: every element read and written once per pass.
void MeasureMemory(Compute& compute, const EfficiencyBenchOptions& options,
                   EfficiencySamples* samples) {
  const int64_t numel = std::max<int64_t>(1, options.memory_bytes / ElementBytes(options.type));
  Tensor x = compute.Allocate({numel}, options.type);
  compute.Fill(1.0f, x);
  samples->memory_bytes = 2.0 * static_cast<double>(x.bytes());
  samples->memory_seconds = SecondsPerCall(
      compute, [&] { compute.Scale(1.0f, x); }, options);
}

}  // namespace

GemmLadder DefaultGemmLadder(const std::string& device) {
  if (device == "cuda") return {.min_m = 256, .max_gflop = 1100};
  return {.min_m = 64, .max_gflop = 2.2};
}

int64_t DefaultMemoryBytes(const std::string& device) {
  return device == "cuda" ? int64_t{1} << 30 : int64_t{256} << 20;
}

std::vector<int64_t> GemmSizes(const GemmLadder& ladder) {
  std::vector<int64_t> sizes;
  for (int i = 0;; ++i) {
    const double exact = static_cast<double>(ladder.min_m) * std::pow(2.0, i / 2.0);
    const int64_t m = std::max<int64_t>(1, std::llround(exact / kSizeMultiple) * kSizeMultiple);
    const double md = static_cast<double>(m);
    if (2.0 * md * md * md / 1e9 > ladder.max_gflop) return sizes;
    if (sizes.empty() || m > sizes.back()) sizes.push_back(m);
  }
}

EfficiencySamples MeasureEfficiency(Compute& compute, const EfficiencyBenchOptions& options,
                                    const EfficiencyProgressFn& progress) {
  TRIDENT_CHECK(compute.Supports(options.type)) << compute.Describe();
  const int total = static_cast<int>(options.gemm_sizes.size()) + 1;
  EfficiencySamples samples;
  int done = 0;
  for (int64_t m : options.gemm_sizes) {
    TRIDENT_CHECK(m >= 1) << "GEMM size " << m;
    for (const GemmSample& s : MeasureGemm(compute, m, options)) samples.gemm.push_back(s);
    if (progress) progress("gemm m=n=k " + std::to_string(m), ++done, total);
  }
  MeasureMemory(compute, options, &samples);
  if (progress)
    progress("memory pass over " + FormatBytes(samples.memory_bytes / 2), ++done, total);
  return samples;
}

}  // namespace trident
