// The device's efficiency section and the links' efficiency: reading, writing, defaults, the
// GEMM curve's interpolation and the collective formula at the achieved bandwidth.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/cluster.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

constexpr char kHead[] = R"(format_version: 1
kind: cluster
name: effic
nodes: 2
devices_per_node: 8
device:
  name: Test GPU
  kind: gpu
  memory_gib: 80
  memory_bw_gb_per_s: 2000
  peak_tflops: {bf16: 300}
)";

constexpr char kEfficiency[] = R"(  efficiency:
    gemm:
      - {gflop: 1, fraction: 0.4}
      - {gflop: 100, fraction: 0.8}
    clock: 0.9
    memory: 0.85
)";

constexpr char kLinks[] = R"(links:
  intra_node: {bw_gb_per_s: 300, latency_us: 3, collective_latency_us: 8.4, efficiency: 0.75}
  inter_node: {bw_gb_per_s: 25, latency_us: 5}
)";

StatusOr<ClusterSpec> Parse(const std::string& efficiency) {
  return ParseClusterSpec(std::string(kHead) + efficiency + kLinks, "effic.yaml");
}

TEST(ClusterEfficiency, AbsentMeansTheFlatDefaultAndFullBandwidth) {
  StatusOr<ClusterSpec> c = Parse("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->device.efficiency.GemmFraction(1e-3), 0.8);
  EXPECT_DOUBLE_EQ(c->device.efficiency.GemmFraction(1e6), 0.8);
  EXPECT_DOUBLE_EQ(c->device.efficiency.memory, 1.0);
  EXPECT_DOUBLE_EQ(c->inter_node.efficiency, 1.0);
  EXPECT_DOUBLE_EQ(c->intra_node.efficiency, 0.75);
  EXPECT_DOUBLE_EQ(c->intra_node.collective_latency_us, 8.4);
  EXPECT_DOUBLE_EQ(c->inter_node.collective_latency_us, 0.0);
}

// Linear in log(gflop) between points, the ends' values beyond them, all times the clock:
// 10 GFLOP is halfway from 1 to 100 in log, so (0.4 + 0.8) / 2 · 0.9 = 0.54.
TEST(ClusterEfficiency, TheCurveInterpolatesInLogSize) {
  StatusOr<ClusterSpec> c = Parse(kEfficiency);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const DeviceEfficiency& e = c->device.efficiency;
  EXPECT_DOUBLE_EQ(e.GemmFraction(0.01), 0.4 * 0.9);
  EXPECT_DOUBLE_EQ(e.GemmFraction(1), 0.4 * 0.9);
  EXPECT_NEAR(e.GemmFraction(10), 0.54, 1e-12);
  EXPECT_DOUBLE_EQ(e.GemmFraction(100), 0.8 * 0.9);
  EXPECT_DOUBLE_EQ(e.GemmFraction(1e5), 0.8 * 0.9);
  EXPECT_LT(e.GemmFraction(5), e.GemmFraction(50));
}

TEST(ClusterEfficiency, RoundTripKeepsEveryFigure) {
  StatusOr<ClusterSpec> c = Parse(kEfficiency);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  StatusOr<ClusterSpec> again = ParseClusterSpec(ClusterSpecToYaml(*c), "again.yaml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *c);
}

TEST(ClusterEfficiency, FractionsOutsideZeroToOneAreRefused) {
  ClusterSpec c = *Parse(kEfficiency);
  c.device.efficiency.memory = 0;
  EXPECT_THAT(c.Validate().message(), HasSubstr("device.efficiency.memory: must be in (0, 1]"));
  c = *Parse(kEfficiency);
  c.inter_node.efficiency = 1.01;
  EXPECT_THAT(c.Validate().message(), HasSubstr("links.inter_node.efficiency: must be in (0, 1]"));
  c = *Parse(kEfficiency);
  c.device.efficiency.gemm[1].gflop = 1;
  EXPECT_THAT(c.Validate().message(), HasSubstr("device.efficiency.gemm[1].gflop: must be larger"));
}

// All-reduce of 1 GB over 8 ranks on 25 GB/s at efficiency 0.8 (20 GB/s achieved), α 5 µs:
// 14·5 µs + 1.75 · 50 ms = 87.57 ms; three calls pay the latency three times.
TEST(ClusterEfficiency, CollectivesRunAtTheAchievedBandwidth) {
  LinkSpec link{25, 5, 0.8};
  EXPECT_NEAR(RingCollectiveMs(Collective::kAllReduce, 1e9, 8, link), 87.57, 1e-9);
  EXPECT_NEAR(RingCollectiveMs(Collective::kAllReduce, 1e9, 8, link, 3), 87.57 + 0.14, 1e-9);
  EXPECT_NEAR(RingCollectiveMs(Collective::kAllGather, 1e9, 8, link), 0.035 + 43.75, 1e-9);
  EXPECT_NEAR(RingCollectiveMs(Collective::kP2p, 1e9, 2, link), 0.005 + 50, 1e-9);
  EXPECT_EQ(RingCollectiveMs(Collective::kAllReduce, 1e9, 1, link), 0);
  EXPECT_EQ(RingCollectiveMs(Collective::kAllReduce, 0, 8, link), 0);
}

// A collective's base latency α0 is paid once per call besides its hops; a p2p transfer pays
// none. NCCL's ring on NVLink (α0 8.4 µs, α 3.4 µs), 8 ranks, 1 MB at 300 GB/s: an all-reduce
// 8.4 + 14·3.4 = 56 µs + 1.75 · 3.333 µs; an all-gather 8.4 + 7·3.4 = 32.2 µs + 0.875 · 3.333 µs.
TEST(ClusterEfficiency, CollectivesPayTheirBaseLatencyOncePerCall) {
  LinkSpec link{300, 3.4, 1, 8.4};
  const double wire_ms = 1e6 / 300e6;
  EXPECT_NEAR(RingCollectiveMs(Collective::kAllReduce, 1e6, 8, link), 0.056 + 1.75 * wire_ms,
              1e-12);
  EXPECT_NEAR(RingCollectiveMs(Collective::kAllReduce, 1e6, 8, link, 2), 2 * 0.056 + 1.75 * wire_ms,
              1e-12);
  EXPECT_NEAR(RingCollectiveMs(Collective::kReduceScatter, 1e6, 8, link), 0.0322 + 0.875 * wire_ms,
              1e-12);
  EXPECT_NEAR(RingCollectiveMs(Collective::kP2p, 1e6, 2, link), 0.0034 + wire_ms, 1e-12);
}

}  // namespace
}  // namespace trident
