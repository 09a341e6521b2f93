#include "profiler/comm_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "core/text_format.h"
#include "profiler/repeat_policy.h"
#include "runtime/layers/layer_ops.h"

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

// Comm counts are ints (MPI); 2 GiB keeps every buffer well inside that.
constexpr int64_t kMaxBytes = int64_t{1} << 31;
constexpr int kTag = 0;

std::vector<int> Strided(int count, int stride) {
  std::vector<int> ranks;
  for (int i = 0; i < count; ++i) ranks.push_back(i * stride);
  return ranks;
}

// 2, 4, 8, ... up to `limit`, and `limit` itself.
std::vector<int> GroupSizes(int limit) {
  std::vector<int> sizes;
  for (int n = 2; n <= limit; n *= 2) sizes.push_back(n);
  if (limit >= 2 && sizes.back() != limit) sizes.push_back(limit);
  return sizes;
}

std::string RankListText(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

std::string Describe(Collective collective, const CommGroup& group) {
  return NameOf(CollectiveNames(), collective) + " over " + std::to_string(group.ranks.size()) +
         " ranks " + RankListText(group.ranks) + " (" + NameOf(LinkClassNames(), group.link) + ")";
}

std::vector<Collective> CollectivesOf(const CommGroup& group) {
  std::vector<Collective> collectives;
  if (group.ranks.size() == 2) collectives.push_back(Collective::kP2p);
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter})
    collectives.push_back(c);
  return collectives;
}

// Floats in B: all-gather and reduce-scatter need a whole number of floats per rank.
int64_t TotalFloats(Collective collective, int64_t bytes, int group_size) {
  int64_t floats = bytes / static_cast<int64_t>(sizeof(float));
  if (collective == Collective::kAllGather || collective == Collective::kReduceScatter) {
    floats = floats / group_size * group_size;
  }
  return floats;
}

// CommPattern(rank, index) = ((Phase(index) + 97·rank) mod 1021) − 510: a rank shifts the
// phase, so ranks fewer than 1,021 apart always differ at the same index.
constexpr int kPatternPeriod = 1021;  // prime

int PatternPhase(int64_t index) {
  const uint64_t i = static_cast<uint64_t>(index) % kPatternPeriod;
  return static_cast<int>((i * (2654435761u % kPatternPeriod) + 12345u) % kPatternPeriod);
}

// Σ over ranks 0..n−1 of the pattern, by phase, so that the exact sums of a buffer cost
// O(1,021 · n + elements) rather than O(n · elements). Exact: small integers.
std::vector<float> PatternSumsByPhase(int n) {
  std::vector<float> sums(kPatternPeriod);
  for (int phase = 0; phase < kPatternPeriod; ++phase) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += (phase + 97 * (r % kPatternPeriod)) % kPatternPeriod - 510;
    sums[phase] = static_cast<float>(sum);
  }
  return sums;
}

// One rank's buffers for one (collective, size): the two it communicates are tensors of the
// sweep's compute backend (host or device memory); the exact result, and the result copied back
// for the check, are on the host.
struct Buffers {
  Tensor input;                 // this rank's contribution
  Tensor output;                // the result (for all-reduce, the in-place buffer)
  std::vector<float> expected;  // the exact result
  std::vector<float> received;  // the result, copied back after a repeat
};

Buffers MakeBuffers(Compute& compute, Collective collective, int64_t total, int rank, int n) {
  Buffers b;
  const int64_t block = total / n;
  const bool gathers = collective == Collective::kAllGather;
  const bool scatters = collective == Collective::kReduceScatter;
  std::vector<float> input(static_cast<size_t>(gathers ? block : total));
  for (int64_t i = 0; i < static_cast<int64_t>(input.size()); ++i) input[i] = CommPattern(rank, i);
  b.input = compute.Allocate({static_cast<int64_t>(input.size())});
  compute.CopyFromHost(input, b.input);
  b.output = compute.Allocate({scatters ? block : total});
  b.expected.resize(static_cast<size_t>(b.output.numel()));
  b.received.resize(b.expected.size());
  const std::vector<float> sums =
      gathers || collective == Collective::kP2p ? std::vector<float>() : PatternSumsByPhase(n);
  for (int64_t i = 0; i < static_cast<int64_t>(b.expected.size()); ++i) {
    switch (collective) {
      case Collective::kP2p:
        b.expected[i] = CommPattern(1 - rank, i);
        break;
      case Collective::kAllReduce:
        b.expected[i] = sums[PatternPhase(i)];
        break;
      case Collective::kAllGather:
        b.expected[i] = CommPattern(i / block, i % block);
        break;
      case Collective::kReduceScatter:
        b.expected[i] = sums[PatternPhase(rank * block + i)];
        break;
    }
  }
  return b;
}

// Before each repeat: the all-reduce input back in place; NaN wherever a result must land,
// so an element nobody wrote cannot pass the check. Returns when the buffers are ready.
void Prepare(Compute& compute, Collective collective, Buffers* b) {
  if (collective == Collective::kAllReduce) {
    compute.Copy(b->input, b->output);
  } else {
    compute.Fill(std::numeric_limits<float>::quiet_NaN(), b->output);
  }
  compute.Synchronize();
}

// Ping-pong: group rank 0 sends, group rank 1 receives and answers with its own message.
Status PingPong(Comm& comm, Buffers& b, std::chrono::milliseconds timeout) {
  const int peer = 1 - comm.Rank();
  if (comm.Rank() == 0) {
    TRIDENT_ASSIGN_OR_RETURN(Request send, comm.Isend(WireOf(b.input), peer, kTag));
    TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(WireOf(b.output), peer, kTag));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(recv, timeout));
    return comm.Wait(send, timeout);
  }
  TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(WireOf(b.output), peer, kTag));
  TRIDENT_RETURN_IF_ERROR(comm.Wait(recv, timeout));
  TRIDENT_ASSIGN_OR_RETURN(Request send, comm.Isend(WireOf(b.input), peer, kTag));
  return comm.Wait(send, timeout);
}

Status RunOnce(Comm& comm, Collective collective, Buffers& b, std::chrono::milliseconds timeout) {
  switch (collective) {
    case Collective::kP2p:
      return PingPong(comm, b, timeout);
    case Collective::kAllReduce:
      return comm.AllReduceSum(WireOf(b.output));
    case Collective::kAllGather:
      return comm.AllGather(WireOf(b.input), WireOf(b.output));
    case Collective::kReduceScatter:
      return comm.ReduceScatterSum(WireOf(b.input), WireOf(b.output));
  }
  return Internal("unknown collective");
}

// What one rank tells its group after a size: its median time and its first wrong element.
struct RankReport {
  double median_us = 0;
  bool bad = false;
  int repeat = 0;
  int64_t index = 0;
  float got = 0;
  float expected = 0;
};

// Copies the result back (outside the timing) and compares it with the exact one.
void FindMismatch(Compute& compute, Buffers& b, int repeat, RankReport* report) {
  if (report->bad) return;
  compute.CopyToHost(b.output, std::span<float>(b.received));
  auto [got, want] = std::mismatch(b.received.begin(), b.received.end(), b.expected.begin());
  if (got == b.received.end()) return;
  report->bad = true;
  report->repeat = repeat;
  report->index = got - b.received.begin();
  report->got = *got;
  report->expected = *want;
}

// Every rank's report, through one all-gather of floats. The index travels as two floats of
// 20 bits each so that it stays exact past 2^24.
constexpr int kReportFloats = 7;
StatusOr<std::vector<RankReport>> ExchangeReports(Comm& comm, const RankReport& mine) {
  std::vector<float> send = {static_cast<float>(mine.median_us),
                             mine.bad ? 1.0f : 0.0f,
                             static_cast<float>(mine.repeat),
                             static_cast<float>(mine.index >> 20),
                             static_cast<float>(mine.index & ((1 << 20) - 1)),
                             mine.got,
                             mine.expected};
  std::vector<float> all(send.size() * comm.Size());
  TRIDENT_RETURN_IF_ERROR(comm.AllGather(send, all));
  std::vector<RankReport> reports(comm.Size());
  for (int r = 0; r < comm.Size(); ++r) {
    const float* f = &all[r * kReportFloats];
    reports[r] = {f[0],
                  f[1] != 0,
                  static_cast<int>(f[2]),
                  (static_cast<int64_t>(f[3]) << 20) + static_cast<int64_t>(f[4]),
                  f[5],
                  f[6]};
  }
  return reports;
}

Status MismatchError(Collective collective, const CommGroup& group, int64_t floats, int repeats,
                     int rank, const RankReport& r) {
  return Internal("check failed: " + Describe(collective, group) + ", " +
                  FormatCount(floats * static_cast<int64_t>(sizeof(float))) + " B (" +
                  FormatCount(floats) + " floats), repeat " + std::to_string(r.repeat + 1) +
                  " of " + std::to_string(repeats) + ": world rank " +
                  std::to_string(group.ranks[rank]) + " received " + FormatFixed(r.got, 1) +
                  " at element " + FormatCount(r.index) + " where " + FormatFixed(r.expected, 1) +
                  " was expected; the communication backend returned a wrong result");
}

// Times `iters` checked repeats of one (collective, size) after `warmup` ones; nullopt when
// the size rounds to nothing for this group.
StatusOr<std::optional<CommPoint>> MeasureSize(Comm& comm, Compute& compute, const CommGroup& group,
                                               Collective collective, int64_t bytes,
                                               const CommSweepOptions& o) {
  const int n = comm.Size();
  const int64_t floats = TotalFloats(collective, bytes, n);
  if (floats == 0) return std::optional<CommPoint>();
  Buffers b = MakeBuffers(compute, collective, floats, comm.Rank(), n);
  std::vector<double> times_us;
  RankReport mine;
  for (int k = 0; k < o.warmup + o.iters; ++k) {
    Prepare(compute, collective, &b);
    TRIDENT_RETURN_IF_ERROR(comm.Barrier());
    Clock::time_point start = Clock::now();
    TRIDENT_RETURN_IF_ERROR(RunOnce(comm, collective, b, o.p2p_timeout));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (k >= o.warmup) times_us.push_back(collective == Collective::kP2p ? us / 2 : us);
    FindMismatch(compute, b, k, &mine);
  }
  mine.median_us = Median(times_us);
  TRIDENT_ASSIGN_OR_RETURN(std::vector<RankReport> reports, ExchangeReports(comm, mine));
  CommPoint p{collective, group.link, n, floats * static_cast<int64_t>(sizeof(float))};
  for (int r = 0; r < n; ++r) {
    if (reports[r].bad) {
      return MismatchError(collective, group, floats, o.warmup + o.iters, r, reports[r]);
    }
    p.time_us = std::max(p.time_us, reports[r].median_us);
  }
  p.algbw_gb_per_s = AlgBandwidthGbPerS(static_cast<double>(p.bytes), p.time_us);
  p.busbw_gb_per_s = p.algbw_gb_per_s * BusBandwidthFactor(collective, n);
  return std::optional<CommPoint>(p);
}

// Every collective and size of one group, on its members. `step` counts progress lines.
Status SweepGroup(Comm& world, Compute& compute, const CommGroup& group, const CommSweepOptions& o,
                  const std::vector<int64_t>& sizes, int total_steps, int* step,
                  std::vector<CommPoint>* points) {
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> comm, world.Split(group.ranks));
  for (Collective collective : CollectivesOf(group)) {
    Clock::time_point start = Clock::now();
    int measured = 0;
    for (int64_t bytes : sizes) {
      TRIDENT_ASSIGN_OR_RETURN(std::optional<CommPoint> p,
                               MeasureSize(*comm, compute, group, collective, bytes, o));
      // Sizes that round to the same B (all-gather, reduce-scatter, odd bytes) count once.
      if (!p || (measured > 0 && points->back().bytes == p->bytes)) continue;
      points->push_back(*p);
      ++measured;
    }
    ++*step;
    if (world.Rank() == 0 && o.progress) {
      double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      o.progress("[" + std::to_string(*step) + "/" + std::to_string(total_steps) + "] " +
                 Describe(collective, group) + ": " + std::to_string(measured) + " sizes in " +
                 FormatFixed(seconds, 2) + " s");
    }
  }
  return Status::Ok();
}

bool Contains(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// "measured[0].group_size" -> "group_size".
std::string LastKey(const std::string& key_path) {
  return key_path.substr(key_path.find_last_of('.') + 1);
}

double RoundToSignificant(double value, int digits) {
  if (value <= 0) return value;
  double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(value)));
  return std::round(value * scale) / scale;
}

}  // namespace

std::vector<CommGroup> PlanCommGroups(int world_size, int devices_per_node) {
  std::vector<CommGroup> groups;
  auto add = [&groups](LinkClass link, std::vector<int> ranks) {
    CommGroup group{link, std::move(ranks)};
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
  };
  for (int n : GroupSizes(std::min(devices_per_node, world_size))) {
    add(LinkClass::kIntraNode, Strided(n, 1));
  }
  const int nodes = (world_size + devices_per_node - 1) / devices_per_node;
  if (nodes > 1) {
    for (int n : GroupSizes(nodes)) add(LinkClass::kInterNode, Strided(n, devices_per_node));
    add(LinkClass::kInterNode, Strided(world_size, 1));
  }
  return groups;
}

std::vector<int64_t> MessageSizes(int64_t min_bytes, int64_t max_bytes, int step_factor) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= step_factor) {
    sizes.push_back(bytes);
    if (bytes > max_bytes / step_factor) break;
  }
  return sizes;
}

double BusBandwidthFactor(Collective collective, int group_size) {
  const double n = group_size;
  switch (collective) {
    case Collective::kP2p:
      return 1;
    case Collective::kAllReduce:
      return 2 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return (n - 1) / n;
  }
  return 1;
}

double AlgBandwidthGbPerS(double bytes, double time_us) { return bytes / time_us * 1e-3; }

float CommPattern(int rank, int64_t index) {
  return static_cast<float>((PatternPhase(index) + 97 * (rank % kPatternPeriod)) % kPatternPeriod -
                            510);
}

Status CommSweepOptions::Validate() const {
  auto bad = [](const std::string& text) { return InvalidArgument(text); };
  if (min_bytes < 4)
    return bad("--min-bytes must be at least 4 (one float), got " + std::to_string(min_bytes));
  if (max_bytes < min_bytes) {
    return bad("--max-bytes " + std::to_string(max_bytes) + " is below --min-bytes " +
               std::to_string(min_bytes));
  }
  if (max_bytes > kMaxBytes) {
    return bad("--max-bytes must be at most " + std::to_string(kMaxBytes) + " (2 GiB), got " +
               std::to_string(max_bytes));
  }
  if (step_factor < 2)
    return bad("--step-factor must be at least 2, got " + std::to_string(step_factor));
  if (warmup < 0) return bad("--warmup must not be negative, got " + std::to_string(warmup));
  if (iters < 1) return bad("--iters must be at least 1, got " + std::to_string(iters));
  if (devices_per_node < 1) return bad("devices_per_node must be at least 1");
  if (MessageSizes(min_bytes, max_bytes, step_factor).size() < 2) {
    return bad("--min-bytes " + std::to_string(min_bytes) + " and --max-bytes " +
               std::to_string(max_bytes) + " give one message size with --step-factor " +
               std::to_string(step_factor) +
               "; fitting latency and bandwidth needs at least two: raise --max-bytes");
  }
  return Status::Ok();
}

StatusOr<std::vector<CommPoint>> RunCommSweep(Comm& world, Compute& compute,
                                              const CommSweepOptions& options) {
  TRIDENT_RETURN_IF_ERROR(options.Validate());
  if (world.Size() < 2) {
    return FailedPrecondition("measuring communication needs at least 2 ranks, got " +
                              std::to_string(world.Size()));
  }
  const std::vector<CommGroup> groups = PlanCommGroups(world.Size(), options.devices_per_node);
  const std::vector<int64_t> sizes =
      MessageSizes(options.min_bytes, options.max_bytes, options.step_factor);
  int total_steps = 0, step = 0;
  for (const CommGroup& group : groups) total_steps += CollectivesOf(group).size();
  std::vector<CommPoint> points;
  for (const CommGroup& group : groups) {
    if (Contains(group.ranks, world.Rank())) {
      TRIDENT_RETURN_IF_ERROR(
          SweepGroup(world, compute, group, options, sizes, total_steps, &step, &points));
    }
    TRIDENT_RETURN_IF_ERROR(world.Barrier());
  }
  return points;
}

// Weighted least squares of t = a + s·x with weights w = 1/t², on centred data:
//   s = Σw(x−x̄)(t−t̄) / Σw(x−x̄)²,  a = t̄ − s·x̄   (x̄, t̄ weighted means)
// and, when a < 0, the fit through the origin s = Σw·x·t / Σw·x². β = 1 / (s · 1e3) GB/s.
// Example: points (1,000 B, 8 µs) and (1,000,000 B, 50 µs) -> s = 42/999,000 µs/B,
// a = 7.958 µs, β = 23.79 GB/s.
StatusOr<AlphaBetaFit> FitAlphaBeta(std::span<const double> bytes,
                                    std::span<const double> time_us) {
  if (bytes.size() != time_us.size())
    return InvalidArgument("fit: sizes and times differ in count");
  std::vector<double> distinct(bytes.begin(), bytes.end());
  std::sort(distinct.begin(), distinct.end());
  if (std::unique(distinct.begin(), distinct.end()) - distinct.begin() < 2) {
    return InvalidArgument("fit: needs at least two different message sizes");
  }
  double sw = 0, swx = 0, swt = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!(time_us[i] > 0) || !std::isfinite(time_us[i])) {
      return InvalidArgument("fit: time " + FormatFixed(time_us[i], 3) + " µs is not positive");
    }
    double w = 1 / (time_us[i] * time_us[i]);
    sw += w;
    swx += w * bytes[i];
    swt += w * time_us[i];
  }
  const double x_mean = swx / sw, t_mean = swt / sw;
  double sxx = 0, sxt = 0, sx2 = 0, sx2t = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    double w = 1 / (time_us[i] * time_us[i]);
    sxx += w * (bytes[i] - x_mean) * (bytes[i] - x_mean);
    sxt += w * (bytes[i] - x_mean) * (time_us[i] - t_mean);
    sx2 += w * bytes[i] * bytes[i];
    sx2t += w * bytes[i] * time_us[i];
  }
  double slope = sxt / sxx;
  double alpha = t_mean - slope * x_mean;
  if (alpha < 0) {
    alpha = 0;
    slope = sx2t / sx2;
  }
  if (!(slope > 0) || !std::isfinite(slope)) {
    return InvalidArgument(
        "fit: the time does not grow with the message size, so there is no bandwidth to fit; "
        "raise --max-bytes or --iters");
  }
  AlphaBetaFit fit{alpha, 1 / (slope * 1e3), 0};
  for (size_t i = 0; i < bytes.size(); ++i) {
    double error = std::abs(alpha + slope * bytes[i] - time_us[i]) / time_us[i];
    fit.max_error_fraction = std::max(fit.max_error_fraction, error);
  }
  return fit;
}

std::vector<LinkFit> FitMeasuredLinks(const std::vector<CommPoint>& points,
                                      std::vector<std::string>* notes) {
  using Key = std::tuple<Collective, LinkClass, int>;
  std::vector<Key> order;
  std::map<Key, std::pair<std::vector<double>, std::vector<double>>> series;
  for (const CommPoint& p : points) {
    Key key{p.collective, p.link, p.group_size};
    if (!series.count(key)) order.push_back(key);
    series[key].first.push_back(static_cast<double>(p.bytes));
    series[key].second.push_back(p.time_us);
  }
  std::vector<LinkFit> fits;
  for (const Key& key : order) {
    const auto& [collective, link, group_size] = key;
    const auto& [bytes, times] = series[key];
    StatusOr<AlphaBetaFit> fit = FitAlphaBeta(bytes, times);
    if (!fit.ok()) {
      notes->push_back(NameOf(CollectiveNames(), collective) + " " +
                       NameOf(LinkClassNames(), link) + " over " + std::to_string(group_size) +
                       " ranks: not fitted: " + fit.status().message());
      continue;
    }
    // Written rounded: 0.001 µs and 4 significant digits are far below the measurement noise.
    MeasuredLink m{collective, link, group_size, RoundedTo(fit->alpha_us, 3),
                   RoundToSignificant(fit->beta_gb_per_s, 4)};
    fits.push_back({m, fit->max_error_fraction, static_cast<int>(bytes.size())});
  }
  return fits;
}

ClusterSpec WithMeasuredLinks(const ClusterSpec& cluster, const std::vector<LinkFit>& fits,
                              std::vector<std::string>* notes) {
  ClusterSpec result = cluster;
  result.measured.clear();
  for (const LinkFit& fit : fits) {
    ClusterSpec probe = cluster;
    probe.measured = {fit.link};
    if (FieldCheck error = probe.Check()) {
      notes->push_back(NameOf(CollectiveNames(), fit.link.collective) + " " +
                       NameOf(LinkClassNames(), fit.link.link) + " over " +
                       std::to_string(fit.link.group_size) +
                       " ranks: not written, the cluster format refuses it (" +
                       LastKey(error->key_path) + " " + error->message + ")");
      continue;
    }
    result.measured.push_back(fit.link);
  }
  return result;
}

}  // namespace trident
