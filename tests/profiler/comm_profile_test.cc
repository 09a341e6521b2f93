// profiler/comm_profile.h: the pure parts (groups, sizes, bandwidth factors, the alpha/beta
// fit, the cluster's measured: list) against hand-computed answers, and the sweep on
// in-process worlds of 2 and 4 ranks, including results corrupted on purpose by a Comm wrapper.
#include "profiler/comm_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "core/text_format.h"
#include "runtime/comm/inprocess_comm.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Groups, sizes, factors

std::vector<CommGroup> Groups(std::vector<std::pair<LinkClass, std::vector<int>>> list) {
  std::vector<CommGroup> groups;
  for (auto& [link, ranks] : list) groups.push_back({link, ranks});
  return groups;
}

constexpr LinkClass kIntra = LinkClass::kIntraNode;
constexpr LinkClass kInter = LinkClass::kInterNode;

TEST(PlanCommGroups, OneNode) {
  EXPECT_EQ(PlanCommGroups(2, 2), Groups({{kIntra, {0, 1}}}));
  EXPECT_EQ(PlanCommGroups(3, 4), Groups({{kIntra, {0, 1}}, {kIntra, {0, 1, 2}}}));
  EXPECT_EQ(PlanCommGroups(2, 8), Groups({{kIntra, {0, 1}}}));
  EXPECT_EQ(PlanCommGroups(1, 8), Groups({}));
}

TEST(PlanCommGroups, SpanningNodesAddsOneRankPerNodeAndTheWorld) {
  EXPECT_EQ(PlanCommGroups(4, 2),
            Groups({{kIntra, {0, 1}}, {kInter, {0, 2}}, {kInter, {0, 1, 2, 3}}}));
  EXPECT_EQ(PlanCommGroups(8, 4), Groups({{kIntra, {0, 1}},
                                          {kIntra, {0, 1, 2, 3}},
                                          {kInter, {0, 4}},
                                          {kInter, {0, 1, 2, 3, 4, 5, 6, 7}}}));
  EXPECT_EQ(
      PlanCommGroups(6, 2),
      Groups(
          {{kIntra, {0, 1}}, {kInter, {0, 2}}, {kInter, {0, 2, 4}}, {kInter, {0, 1, 2, 3, 4, 5}}}));
  // A partly filled last node: 3 ranks, 2 per node.
  EXPECT_EQ(PlanCommGroups(3, 2),
            Groups({{kIntra, {0, 1}}, {kInter, {0, 2}}, {kInter, {0, 1, 2}}}));
  // One device per node: the world is also the largest one-per-node group, listed once.
  EXPECT_EQ(PlanCommGroups(4, 1), Groups({{kInter, {0, 1}}, {kInter, {0, 1, 2, 3}}}));
}

TEST(MessageSizes, GeometricUpToTheMaximum) {
  EXPECT_EQ(MessageSizes(4, 64, 4), (std::vector<int64_t>{4, 16, 64}));
  EXPECT_EQ(MessageSizes(4, 100, 2), (std::vector<int64_t>{4, 8, 16, 32, 64}));
  EXPECT_EQ(MessageSizes(4, 4, 2), (std::vector<int64_t>{4}));
  std::vector<int64_t> big = MessageSizes(1, int64_t{1} << 62, 2);
  ASSERT_EQ(big.size(), 63u);
  EXPECT_EQ(big.back(), int64_t{1} << 62);
}

TEST(Bandwidth, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kP2p, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(AlgBandwidthGbPerS(1e6, 100), 10.0);
  // The header's example: 64 MiB all-reduced over 4 ranks in 20 ms.
  double algbw = AlgBandwidthGbPerS(67108864, 20000);
  EXPECT_NEAR(algbw, 3.3554, 1e-4);
  EXPECT_NEAR(algbw * BusBandwidthFactor(Collective::kAllReduce, 4), 5.0332, 1e-4);
}

TEST(CommPattern, SmallIntegersThatDifferByRank) {
  for (int64_t i = 0; i < 5000; ++i) {
    std::set<float> seen;
    for (int rank = 0; rank < 64; ++rank) {
      float v = CommPattern(rank, i);
      ASSERT_EQ(v, std::round(v));
      ASSERT_LE(std::abs(v), 510.0f);
      seen.insert(v);
    }
    ASSERT_EQ(seen.size(), 64u) << "ranks collide at index " << i;
  }
  EXPECT_EQ(CommPattern(3, int64_t{1} << 40), CommPattern(3, int64_t{1} << 40));
}

TEST(CommSweepOptions, RejectsBadValuesNamingTheFlag) {
  auto error = [](auto change) {
    CommSweepOptions o;
    change(o);
    return o.Validate().message();
  };
  EXPECT_TRUE(CommSweepOptions().Validate().ok());
  EXPECT_THAT(error([](auto& o) { o.min_bytes = 2; }), HasSubstr("--min-bytes"));
  EXPECT_THAT(error([](auto& o) { o.max_bytes = 2; }), HasSubstr("--max-bytes"));
  EXPECT_THAT(error([](auto& o) { o.max_bytes = int64_t{4} << 30; }), HasSubstr("2 GiB"));
  EXPECT_THAT(error([](auto& o) { o.step_factor = 1; }), HasSubstr("--step-factor"));
  EXPECT_THAT(error([](auto& o) { o.iters = 0; }), HasSubstr("--iters"));
  EXPECT_THAT(error([](auto& o) { o.warmup = -1; }), HasSubstr("--warmup"));
  EXPECT_THAT(error([](auto& o) { o.max_bytes = o.min_bytes = 64; }), HasSubstr("at least two"));
}

// ---------------------------------------------------------------------------------------------
// The fit

TEST(FitAlphaBeta, RecoversAlphaAndBetaFromExactPoints) {
  const double alpha_us = 7.5, beta = 23.1;
  std::vector<double> bytes = {4, 64, 1024, 65536, 1 << 20, 64 << 20};
  std::vector<double> times;
  for (double b : bytes) times.push_back(alpha_us + b / (beta * 1e3));
  StatusOr<AlphaBetaFit> fit = FitAlphaBeta(bytes, times);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->alpha_us, alpha_us, 1e-9 * alpha_us);
  EXPECT_NEAR(fit->beta_gb_per_s, beta, 1e-9 * beta);
  EXPECT_LT(fit->max_error_fraction, 1e-12);
}

TEST(FitAlphaBeta, TwoPointsGiveTheLineThroughThem) {
  // The worked example next to the code.
  std::vector<double> bytes = {1000, 1e6}, times = {8, 50};
  StatusOr<AlphaBetaFit> fit = FitAlphaBeta(bytes, times);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->alpha_us, 8 - 1000 * 42.0 / 999000, 1e-12);
  EXPECT_NEAR(fit->beta_gb_per_s, 999000 / 42.0 / 1e3, 1e-9);
}

TEST(FitAlphaBeta, WeighsRelativeErrors) {
  // 10% noise on the large size must not swamp the 2 µs latency of the small ones.
  std::vector<double> bytes = {8, 16, 32, 1e8}, times = {2, 2, 2, 1e4 * 1.1};
  StatusOr<AlphaBetaFit> fit = FitAlphaBeta(bytes, times);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->alpha_us, 2, 0.01);
  EXPECT_NEAR(fit->beta_gb_per_s, 1e8 / 1.1e4 / 1e3, 0.01);
}

TEST(FitAlphaBeta, NegativeInterceptIsClampedAndTheSlopeRefitted) {
  std::vector<double> bytes = {1000, 2000, 4000}, times = {0.5, 2.0, 4.0};
  StatusOr<AlphaBetaFit> fit = FitAlphaBeta(bytes, times);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_EQ(fit->alpha_us, 0);
  double num = 0, den = 0;  // Σ w x t / Σ w x², w = 1/t²
  for (int i = 0; i < 3; ++i) {
    num += bytes[i] / times[i];
    den += bytes[i] * bytes[i] / (times[i] * times[i]);
  }
  EXPECT_NEAR(fit->beta_gb_per_s, 1 / (num / den * 1e3), 1e-12);
  EXPECT_NEAR(fit->max_error_fraction, std::abs(1000 * num / den - 0.5) / 0.5, 1e-12);
}

TEST(FitAlphaBeta, RefusesWhatHasNoBandwidth) {
  std::vector<double> one = {64, 64}, two = {64, 128};
  EXPECT_THAT(FitAlphaBeta(one, std::vector<double>{1, 2}).status().message(),
              HasSubstr("two different message sizes"));
  EXPECT_THAT(FitAlphaBeta(two, std::vector<double>{0, 2}).status().message(),
              HasSubstr("not positive"));
  EXPECT_THAT(FitAlphaBeta(two, std::vector<double>{3, 2}).status().message(),
              HasSubstr("does not grow"));
  EXPECT_FALSE(FitAlphaBeta(two, std::vector<double>{1}).ok());
}

CommPoint Point(Collective c, LinkClass link, int n, int64_t bytes, double alpha, double beta) {
  return {c, link, n, bytes, alpha + static_cast<double>(bytes) / (beta * 1e3), 0, 0};
}

TEST(FitMeasuredLinks, OneRoundedFitPerKeyInOrderAndNotesForTheRest) {
  std::vector<CommPoint> points;
  for (int64_t bytes : {64, 4096, 1 << 20}) {
    points.push_back(Point(Collective::kAllReduce, kIntra, 2, bytes, 3.14159, 12.34567));
    points.push_back(Point(Collective::kP2p, kInter, 2, bytes, 1.0, 5.0));
  }
  points.push_back(Point(Collective::kAllGather, kIntra, 2, 64, 2, 1));  // one size only
  std::vector<std::string> notes;
  std::vector<LinkFit> fits = FitMeasuredLinks(points, &notes);
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].link, (MeasuredLink{Collective::kAllReduce, kIntra, 2, 3.142, 12.35}));
  EXPECT_EQ(fits[0].num_points, 3);
  EXPECT_EQ(fits[1].link, (MeasuredLink{Collective::kP2p, kInter, 2, 1.0, 5.0}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("all_gather intra_node over 2 ranks: not fitted"));
}

ClusterSpec TwoNodes() {
  ClusterSpec c;
  c.name = "two-nodes";
  c.nodes = 2;
  c.devices_per_node = 2;
  c.device = {"cpu-core", DeviceKind::kCpu, 8, {{DType::kFp32, 0.1}}, 10, {}, {}};
  c.intra_node = {5, 1, 1};
  c.inter_node = {1, 10, 1};
  c.measured = {{Collective::kP2p, kIntra, 2, 99, 99}};
  return c;
}

TEST(WithMeasuredLinks, ReplacesTheListAndLeavesOutWhatTheFormatRefuses) {
  ClusterSpec cluster = TwoNodes();
  ASSERT_TRUE(cluster.Validate().ok()) << cluster.Validate().ToString();
  std::vector<LinkFit> fits = {{{Collective::kAllReduce, kIntra, 2, 1.5, 4.0}, 0.1, 5},
                               {{Collective::kAllReduce, kInter, 2, 9.0, 1.0}, 0.1, 5},
                               {{Collective::kAllReduce, kInter, 4, 9.0, 1.0}, 0.1, 5}};
  std::vector<std::string> notes;
  ClusterSpec out = WithMeasuredLinks(cluster, fits, &notes);
  EXPECT_EQ(out.measured, (std::vector<MeasuredLink>{fits[0].link, fits[1].link}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("all_reduce inter_node over 4 ranks: not written"));
  EXPECT_THAT(notes[0], HasSubstr("(group_size must be between 2 and 2, got 4)"));
  EXPECT_TRUE(out.Validate().ok());
  out.measured = cluster.measured;
  EXPECT_EQ(out, cluster);  // nothing else changed
}

// ---------------------------------------------------------------------------------------------
// The sweep on in-process worlds

CommSweepOptions SmallSweep(int devices_per_node) {
  CommSweepOptions o;
  o.min_bytes = 4;
  o.max_bytes = 4096;
  o.step_factor = 4;  // 4, 16, 64, 256, 1024, 4096
  o.warmup = 1;
  o.iters = 3;
  o.devices_per_node = devices_per_node;
  return o;
}

CommOptions TenSeconds() {
  CommOptions options;
  options.collective_timeout = std::chrono::seconds(10);
  return options;
}

// Runs the sweep on `num_ranks` in-process ranks and returns each rank's points.
std::vector<std::vector<CommPoint>> Sweep(int num_ranks, const CommSweepOptions& options,
                                          std::vector<std::string>* progress = nullptr) {
  std::vector<std::vector<CommPoint>> by_rank(num_ranks);
  std::mutex mu;
  CommSweepOptions o = options;
  if (progress) {
    o.progress = [&](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      progress->push_back(line);
    };
  }
  Status status = RunInProcess(
      num_ranks,
      [&](Comm& comm) -> Status {
        CpuCompute compute;
        TRIDENT_ASSIGN_OR_RETURN(by_rank[comm.Rank()], RunCommSweep(comm, compute, o));
        return Status::Ok();
      },
      TenSeconds());
  EXPECT_TRUE(status.ok()) << status.ToString();
  return by_rank;
}

using Key = std::tuple<Collective, LinkClass, int>;

std::map<Key, std::vector<int64_t>> SizesByKey(const std::vector<CommPoint>& points) {
  std::map<Key, std::vector<int64_t>> sizes;
  for (const CommPoint& p : points) sizes[{p.collective, p.link, p.group_size}].push_back(p.bytes);
  return sizes;
}

void ExpectConsistent(const CommPoint& p) {
  EXPECT_GT(p.time_us, 0);
  EXPECT_DOUBLE_EQ(p.algbw_gb_per_s, static_cast<double>(p.bytes) / p.time_us / 1e3);
  EXPECT_DOUBLE_EQ(p.busbw_gb_per_s,
                   p.algbw_gb_per_s * BusBandwidthFactor(p.collective, p.group_size));
}

const std::vector<int64_t> kAllSizes = {4, 16, 64, 256, 1024, 4096};

TEST(RunCommSweep, TwoRanksMeasureEveryCollectiveAndSize) {
  std::vector<std::string> progress;
  std::vector<std::vector<CommPoint>> by_rank = Sweep(2, SmallSweep(2), &progress);
  // All-gather and reduce-scatter need a whole float per rank: 4 B is skipped.
  const std::vector<int64_t> whole = {16, 64, 256, 1024, 4096};
  std::map<Key, std::vector<int64_t>> expected = {{{Collective::kP2p, kIntra, 2}, kAllSizes},
                                                  {{Collective::kAllReduce, kIntra, 2}, kAllSizes},
                                                  {{Collective::kAllGather, kIntra, 2}, whole},
                                                  {{Collective::kReduceScatter, kIntra, 2}, whole}};
  EXPECT_EQ(SizesByKey(by_rank[0]), expected);
  EXPECT_EQ(SizesByKey(by_rank[1]), expected);
  for (const CommPoint& p : by_rank[0]) ExpectConsistent(p);
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_THAT(progress[0], HasSubstr("[1/4] p2p over 2 ranks [0, 1] (intra_node): 6 sizes"));
  EXPECT_THAT(progress[3], HasSubstr("[4/4] reduce_scatter"));
}

TEST(RunCommSweep, FourRanksOnTwoNodesMeasureInsideAndAcrossNodes) {
  std::vector<std::vector<CommPoint>> by_rank = Sweep(4, SmallSweep(2));
  std::map<Key, std::vector<int64_t>> sizes = SizesByKey(by_rank[0]);
  std::set<Key> keys;
  for (const auto& [key, list] : sizes) keys.insert(key);
  std::set<Key> expected;
  for (LinkClass link : {kIntra, kInter}) {
    for (Collective c : {Collective::kP2p, Collective::kAllReduce, Collective::kAllGather,
                         Collective::kReduceScatter}) {
      expected.insert({c, link, 2});
    }
  }
  for (Collective c :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    expected.insert({c, kInter, 4});
  }
  EXPECT_EQ(keys, expected);
  // Over 4 ranks B holds a whole float per rank: 16 B and up.
  EXPECT_EQ((sizes[{Collective::kAllGather, kInter, 4}]),
            (std::vector<int64_t>{16, 64, 256, 1024, 4096}));
  EXPECT_EQ((sizes[{Collective::kAllReduce, kInter, 4}]), kAllSizes);
  for (const CommPoint& p : by_rank[0]) ExpectConsistent(p);
  // Rank 3 belongs only to the world group; rank 2 also to the inter-node pair {0, 2}.
  std::set<Key> rank3;
  for (const CommPoint& p : by_rank[3]) rank3.insert({p.collective, p.link, p.group_size});
  EXPECT_EQ(rank3, (std::set<Key>{{Collective::kAllReduce, kInter, 4},
                                  {Collective::kAllGather, kInter, 4},
                                  {Collective::kReduceScatter, kInter, 4}}));
  EXPECT_EQ(SizesByKey(by_rank[2]).size(), 7u);
}

TEST(RunCommSweep, FourRanksOnOneNodeAreAllIntraNode) {
  std::vector<std::vector<CommPoint>> by_rank = Sweep(4, SmallSweep(4));
  std::map<Key, std::vector<int64_t>> sizes = SizesByKey(by_rank[0]);
  EXPECT_EQ(sizes.size(), 7u);  // p2p, 3 collectives over 2 ranks; 3 over 4
  for (const auto& [key, list] : sizes) EXPECT_EQ(std::get<1>(key), kIntra);
  EXPECT_EQ((sizes[{Collective::kReduceScatter, kIntra, 4}]),
            (std::vector<int64_t>{16, 64, 256, 1024, 4096}));
}

TEST(RunCommSweep, OneRankIsRefused) {
  Status status = RunInProcess(1, [](Comm& comm) {
    CpuCompute compute;
    return RunCommSweep(comm, compute, SmallSweep(1)).status();
  });
  EXPECT_THAT(status.message(), HasSubstr("at least 2 ranks"));
}

// A Comm that forwards to another and damages one kind of result with at least 64 floats:
// the result of an all-reduce, all-gather or reduce-scatter on this rank, or the data this
// rank sends point-to-point. Its sub-communicators do the same.
class CorruptingComm final : public Comm {
 public:
  CorruptingComm(Comm* inner, Collective target, std::unique_ptr<Comm> owned = nullptr)
      : inner_(inner), owned_(std::move(owned)), target_(target) {}

  int Rank() const override { return inner_->Rank(); }
  int Size() const override { return inner_->Size(); }
  StatusOr<Request> Isend(Wire data, int dest, int tag) override {
    if (target_ != Collective::kP2p || data.count < kMinFloats) {
      return inner_->Isend(data, dest, tag);
    }
    const float* values = static_cast<const float*>(data.data);
    sent_.emplace_back(values, values + data.count);
    Damage(sent_.back());
    return inner_->Isend(sent_.back(), dest, tag);
  }
  StatusOr<Request> Irecv(Wire data, int source, int tag) override {
    return inner_->Irecv(data, source, tag);
  }
  Status Wait(Request& request, std::chrono::milliseconds timeout) override {
    return inner_->Wait(request, timeout);
  }
  StatusOr<bool> Test(Request& request) override { return inner_->Test(request); }
  Status Cancel(Request& request) override { return inner_->Cancel(request); }
  Status AllReduceSum(Wire data) override {
    return After(Collective::kAllReduce, inner_->AllReduceSum(data), data);
  }
  Status AllGather(Wire send, Wire recv) override {
    return After(Collective::kAllGather, inner_->AllGather(send, recv), recv);
  }
  Status ReduceScatterSum(Wire send, Wire recv) override {
    return After(Collective::kReduceScatter, inner_->ReduceScatterSum(send, recv), recv);
  }
  Status Broadcast(Wire data, int root) override { return inner_->Broadcast(data, root); }
  Status Barrier() override { return inner_->Barrier(); }
  StatusOr<Request> StartAllReduceSum(Wire data) override {
    return inner_->StartAllReduceSum(data);
  }
  StatusOr<Request> StartReduceScatterSum(Wire send, Wire recv) override {
    return inner_->StartReduceScatterSum(send, recv);
  }
  StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) override {
    TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> sub, inner_->Split(std::move(ranks)));
    Comm* raw = sub.get();
    return std::unique_ptr<Comm>(new CorruptingComm(raw, target_, std::move(sub)));
  }
  [[noreturn]] void AbortJob(int exit_code) override {
    inner_->AbortJob(exit_code);
    std::_Exit(exit_code);  // not reached
  }

  static constexpr size_t kMinFloats = 64;
  static constexpr size_t kElement = 17;

 private:
  // The sweep moves fp32 only.
  static void Damage(std::vector<float>& data) { data[kElement] += 1; }
  Status After(Collective kind, Status status, const Wire& result) {
    if (status.ok() && kind == target_ && result.count >= kMinFloats) {
      static_cast<float*>(result.data)[kElement] += 1;
    }
    return status;
  }

  Comm* inner_;
  std::unique_ptr<Comm> owned_;
  Collective target_;
  std::deque<std::vector<float>> sent_;  // kept alive until the Comm goes
};

// The sweep on 2 ranks where rank 1's results (or sends) of `target` are damaged.
Status SweepWithDamage(Collective target) {
  return RunInProcess(
      2,
      [target](Comm& comm) -> Status {
        CpuCompute compute;
        if (comm.Rank() != 1) return RunCommSweep(comm, compute, SmallSweep(2)).status();
        CorruptingComm damaged(&comm, target);
        return RunCommSweep(damaged, compute, SmallSweep(2)).status();
      },
      TenSeconds());
}

TEST(RunCommSweep, DetectsADamagedAllReduce) {
  Status status = SweepWithDamage(Collective::kAllReduce);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  // 256 B: the first size with 64 floats.
  EXPECT_THAT(status.message(),
              HasSubstr("check failed: all_reduce over 2 ranks [0, 1] (intra_node), 256 B "
                        "(64 floats), repeat 1 of 4: world rank 1 received"));
  EXPECT_THAT(status.message(), HasSubstr("at element 17 where"));
}

TEST(RunCommSweep, DetectsADamagedAllGatherAndReduceScatter) {
  EXPECT_THAT(SweepWithDamage(Collective::kAllGather).message(),
              HasSubstr("check failed: all_gather over 2 ranks [0, 1] (intra_node), 256 B "
                        "(64 floats), repeat 1 of 4: world rank 1 received"));
  // Reduce-scatter's result is half of B: 64 floats or more from 1,024 B (256 B gives 32).
  EXPECT_THAT(SweepWithDamage(Collective::kReduceScatter).message(),
              HasSubstr("check failed: reduce_scatter over 2 ranks [0, 1] (intra_node), 1,024 B "
                        "(256 floats), repeat 1 of 4: world rank 1 received"));
}

TEST(RunCommSweep, DetectsADamagedMessageAtTheReceiver) {
  Status status = SweepWithDamage(Collective::kP2p);
  // Rank 1 sends damaged data: rank 0 is the one that sees it.
  EXPECT_THAT(status.message(),
              HasSubstr("check failed: p2p over 2 ranks [0, 1] (intra_node), 256 B (64 floats), "
                        "repeat 1 of 4: world rank 0 received"));
  float expected = CommPattern(1, CorruptingComm::kElement);
  EXPECT_THAT(status.message(), HasSubstr("received " + FormatFixed(expected + 1, 1) +
                                          " at element 17 where " + FormatFixed(expected, 1)));
}

}  // namespace
}  // namespace trident
