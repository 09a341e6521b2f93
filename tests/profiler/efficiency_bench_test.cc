#include "profiler/efficiency_bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

using ::testing::ElementsAre;

TEST(EfficiencyBench, LaddersDoubleTheGflopEveryTwoSizes) {
  EXPECT_THAT(GemmSizes(DefaultGemmLadder("cpu")),
              ElementsAre(64, 96, 128, 176, 256, 368, 512, 720, 1024));
  EXPECT_THAT(GemmSizes(DefaultGemmLadder("cuda")),
              ElementsAre(256, 368, 512, 720, 1024, 1456, 2048, 2896, 4096, 5792, 8192));
  EXPECT_THAT(GemmSizes({.min_m = 64, .max_gflop = 0.011}), ElementsAre(64, 96, 128, 176));
  EXPECT_TRUE(GemmSizes({.min_m = 64, .max_gflop = 1e-4}).empty());
}

TEST(EfficiencyBench, TimesEverySizeAndTheMemoryPassOnTheCpu) {
  CpuCompute cpu;
  EfficiencyBenchOptions options;
  options.gemm_sizes = {16, 32};
  options.memory_bytes = 1 << 20;
  options.repeats.max_repeats = 3;
  options.repeats.min_repeats = 3;
  options.min_sample_ms = 0.1;
  std::vector<std::string> seen;
  EfficiencySamples samples =
      MeasureEfficiency(cpu, options, [&](const std::string& what, int done, int total) {
        seen.push_back(what + " " + std::to_string(done) + "/" + std::to_string(total));
      });
  ASSERT_EQ(samples.gemm.size(), 6u);  // 3 per size, the warm-up left out
  EXPECT_DOUBLE_EQ(samples.gemm[0].gflop, 2.0 * 16 * 16 * 16 / 1e9);
  EXPECT_DOUBLE_EQ(samples.gemm[5].gflop, 2.0 * 32 * 32 * 32 / 1e9);
  for (const GemmSample& s : samples.gemm) EXPECT_GT(s.seconds, 0);
  EXPECT_EQ(samples.memory_bytes, 2.0 * (1 << 20));
  EXPECT_EQ(samples.memory_seconds.size(), 3u);
  EXPECT_THAT(
      seen, ElementsAre("gemm m=n=k 16 1/3", "gemm m=n=k 32 2/3", "memory pass over 1.00 MiB 3/3"));
  EXPECT_EQ(cpu.memory_stats().current_bytes, 0);
}

}  // namespace
}  // namespace trident
