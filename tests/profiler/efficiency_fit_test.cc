#include "profiler/efficiency_fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trident {
namespace {

using ::testing::HasSubstr;

constexpr double kPeakTflops = 0.2;
constexpr double kBwGbPerS = 10.0;
constexpr double kMemoryBytes = 512.0 * (1 << 20);

DeviceSpec Device() {
  DeviceSpec device;
  device.kind = DeviceKind::kCpu;
  device.peak_tflops = {{DType::kFp32, kPeakTflops}};
  device.memory_bw_gb_per_s = kBwGbPerS;
  device.efficiency.clock = 0.9;
  return device;
}

// The seconds a product of `gflop` takes at `fraction` of kPeakTflops.
double SecondsAt(double gflop, double fraction) { return gflop / (fraction * kPeakTflops * 1e3); }

// Samples of `curve`, one per point, and a memory pass at `memory` of kBwGbPerS.
EfficiencySamples SamplesOf(const std::vector<EfficiencyPoint>& curve, double memory = 0.5) {
  EfficiencySamples samples;
  for (const EfficiencyPoint& p : curve) {
    samples.gemm.push_back({p.gflop, SecondsAt(p.gflop, p.fraction)});
  }
  samples.memory_bytes = kMemoryBytes;
  samples.memory_seconds = {kMemoryBytes / (memory * kBwGbPerS * 1e9)};
  return samples;
}

StatusOr<EfficiencyFit> Fit(const EfficiencySamples& samples) {
  return FitDeviceEfficiency(samples, Device(), DType::kFp32, "c.yaml");
}

void ExpectCurveNear(const std::vector<EfficiencyPoint>& got,
                     const std::vector<EfficiencyPoint>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i].gflop, want[i].gflop, 1e-9) << i;
    EXPECT_NEAR(got[i].fraction, want[i].fraction, 1e-9) << i;
  }
}

const std::vector<EfficiencyPoint> kCurve = {
    {0.000524288, 0.05}, {0.0335544, 0.3}, {0.268435, 0.55}, {2.14748, 0.7}};

TEST(EfficiencyFit, RecoversTheCurveTheTimingsCameFrom) {
  StatusOr<EfficiencyFit> fit = Fit(SamplesOf(kCurve, 0.625));
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  ExpectCurveNear(fit->efficiency.gemm, kCurve);
  EXPECT_NEAR(fit->efficiency.memory, 0.625, 1e-9);
  EXPECT_NEAR(fit->memory_gb_per_s, 6.25, 1e-9);
  EXPECT_EQ(fit->efficiency.clock, 0.9);  // the device's own: not measured
  EXPECT_NEAR(fit->gemm.back().tflops, 0.14, 1e-9);
  EXPECT_EQ(fit->gemm.back().samples, 1);
}

TEST(EfficiencyFit, NoisyRepeatsGiveTheirMedian) {
  EfficiencySamples samples = SamplesOf({});
  // 0.5 GFLOP at 0.2 TFLOP/s: 2.5 ms at peak. Median of {10, 5, 40, 6, 5.5} ms: 6 ms.
  for (double ms : {10.0, 5.0, 40.0, 6.0, 5.5}) samples.gemm.push_back({0.5, ms * 1e-3});
  samples.memory_seconds = {0.05, kMemoryBytes / (0.5 * kBwGbPerS * 1e9), 9.0};
  StatusOr<EfficiencyFit> fit = Fit(samples);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  ASSERT_EQ(fit->gemm.size(), 1u);
  EXPECT_NEAR(fit->gemm[0].median_seconds, 6e-3, 1e-12);
  EXPECT_EQ(fit->gemm[0].samples, 5);
  ExpectCurveNear(fit->efficiency.gemm, {{0.5, 2.5 / 6.0}});
  EXPECT_NEAR(fit->efficiency.memory, 0.5, 1e-9);
}

TEST(EfficiencyFit, SortsUnorderedSizesAndMergesDuplicates) {
  EfficiencySamples samples = SamplesOf({kCurve[3], kCurve[0], kCurve[2], kCurve[1]});
  samples.gemm.push_back({kCurve[2].gflop, SecondsAt(kCurve[2].gflop, kCurve[2].fraction)});
  samples.gemm.push_back({kCurve[2].gflop, SecondsAt(kCurve[2].gflop, kCurve[2].fraction)});
  StatusOr<EfficiencyFit> fit = Fit(samples);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  ExpectCurveNear(fit->efficiency.gemm, kCurve);
  EXPECT_EQ(fit->gemm[2].samples, 3);
}

TEST(EfficiencyFit, AGemmAbovePeakNamesTheFileKeyAndRate) {
  EfficiencySamples samples = SamplesOf({{2.0, 0.5}});
  samples.gemm.push_back({4.0, 4.0 / 250.0});  // 0.25 TFLOP/s on a 0.2 TFLOP/s device
  StatusOr<EfficiencyFit> fit = Fit(samples);
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(fit.status().message(), HasSubstr("c.yaml: device.peak_tflops.fp32 is 0.2000"));
  EXPECT_THAT(fit.status().message(), HasSubstr("ran at 0.2500 TFLOP/s"));
  EXPECT_THAT(fit.status().message(), HasSubstr("raise device.peak_tflops.fp32"));
}

TEST(EfficiencyFit, AMemoryPassAboveTheBandwidthNamesTheKey) {
  StatusOr<EfficiencyFit> fit = Fit(SamplesOf(kCurve, 1.5));
  ASSERT_FALSE(fit.ok());
  EXPECT_THAT(fit.status().message(), HasSubstr("c.yaml: device.memory_bw_gb_per_s is 10.00"));
  EXPECT_THAT(fit.status().message(), HasSubstr("moved 15.00 GB/s"));
}

TEST(EfficiencyFit, NoSamplesIsAnError) {
  StatusOr<EfficiencyFit> fit = Fit(SamplesOf({}));
  ASSERT_FALSE(fit.ok());
  EXPECT_THAT(fit.status().message(), HasSubstr("no GEMM timings"));
  EfficiencySamples no_memory = SamplesOf(kCurve);
  no_memory.memory_seconds.clear();
  EXPECT_THAT(Fit(no_memory).status().message(), HasSubstr("no memory-bound timings"));
  EfficiencySamples zero = SamplesOf(kCurve);
  zero.gemm[1].seconds = 0;
  EXPECT_THAT(Fit(zero).status().message(), HasSubstr("both must be positive"));
}

TEST(EfficiencyFit, ADtypeWithoutPeakNamesTheKey) {
  StatusOr<EfficiencyFit> fit =
      FitDeviceEfficiency(SamplesOf(kCurve), Device(), DType::kBf16, "c.yaml");
  ASSERT_FALSE(fit.ok());
  EXPECT_THAT(fit.status().message(), HasSubstr("c.yaml: device.peak_tflops.bf16 is missing"));
}

TEST(EfficiencyFit, RoundedForFileKeepsFourDigitsAndValidates) {
  StatusOr<EfficiencyFit> fit = Fit(SamplesOf(kCurve, 0.123456));
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  DeviceEfficiency rounded = RoundedForFile(fit->efficiency);
  ExpectCurveNear(rounded.gemm, {{0.0005243, 0.05}, {0.03355, 0.3}, {0.2684, 0.55}, {2.147, 0.7}});
  EXPECT_EQ(rounded.memory, 0.1235);
  ClusterSpec cluster;
  cluster.name = "c";
  cluster.device = Device();
  cluster.device.name = "d";
  cluster.device.efficiency = rounded;
  cluster.intra_node = cluster.inter_node = {.bw_gb_per_s = 1};
  cluster.device.memory_gib = 1;
  EXPECT_TRUE(cluster.Validate().ok()) << cluster.Validate().ToString();
}

}  // namespace
}  // namespace trident
