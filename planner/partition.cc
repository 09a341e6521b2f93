// The partition dynamic program.
//
// Recurrence. Let A(j, u, k) be the smallest bottleneck with which the first j layers
// [0, j) can be placed on the first u units [0, u) as the first k stages. The last of those
// stages (stage index k - 1) holds layers [i, j - 1] on r units starting at unit u - r, and
// everything before it is an optimal placement of [0, i) on [0, u - r) as k - 1 stages;
// because max is monotone, an optimal prefix gives an optimal whole. Hence
//
//   A(0, 0, 0) = 0;  A(j, u, 0) = +inf otherwise;
//   A(j, u, k) = min over i in [k-1, j-1], r in allowed, r <= u of
//                  max( A(i, u - r, k - 1),
//                       BoundaryMs(i - 1, u - r)            [only when k > 1: a cut exists],
//                       StageMs(i, j - 1, r, u - r, k - 1, P) )
//
// and the answer is A(L, U, P). Every argument of StageMs (its first unit u - r, its stage
// index k - 1, and P) is known in the state, so position-dependent memory (1F1B) and
// two-level networks (a cut whose right stage starts on a node boundary) are exact.
//
// Worked example. Three layers of 4, 2, 2 ms, U = 3 units, P = 2, allowed {1, 2},
// StageMs = (sum of layer ms) / r, BoundaryMs = 1 ms everywhere.
//   A(1, 1, 1) = 4/1 = 4    A(1, 2, 1) = 4/2 = 2    A(2, 1, 1) = 6/1 = 6    A(2, 2, 1) = 6/2 = 3
//   A(3, 3, 2) = min( i=1 r=1: max(A(1,2,1)=2, 1, 4/1=4) = 4,
//                     i=1 r=2: max(A(1,1,1)=4, 1, 4/2=2) = 4,
//                     i=2 r=1: max(A(2,2,1)=3, 1, 2/1=2) = 3,
//                     i=2 r=2: max(A(2,1,1)=6, 1, 2/2=1) = 6 ) = 3:
// layers 0-1 on two units (6/2 = 3 ms), then layer 2 on the third unit.
//
// Only useful states are filled: k stages need j in [k, L - (P - k)] layers, and u must be a
// sum of k allowed counts with U - u a sum of P - k allowed counts. The uniform variant is the
// case allowed = {r}, U = P * r, where u = k * r is the only useful unit count: O(L^2 * P).
//
// Pruning. Each state scans its candidates shortest last stage first. A candidate whose prefix
// value or boundary already reaches the best found is skipped without a StageMs query, and when
// StageMs grows with layers (PartitionCosts::StageMsGrowsWithLayers) the scan over first layers
// ends at the first stage that alone reaches it. Only candidates that cannot be strictly better
// are skipped, so every A stays exact. Measured (O(1) prefix-sum costs, -O2, one core):
// L = 100, U = 64, P = 16, allowed {1..64}: 63M candidates, 2.0M StageMs queries, ~35 ms
// (powers of two ~10 ms, uniform 0.15 ms); without StageMsGrowsWithLayers 51M queries, ~270 ms.
//
// Ties (see partition.h) are broken when the stages are read back: walking from the last
// stage to the first, each step takes the smallest (first layer, replicas) whose value is
// within the optimum and whose prefix can still finish within it (A of the prefix <= optimum).
#include "planner/partition.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <span>
#include <sstream>
#include <utility>

#include "core/check.h"

namespace trident {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One DP run: the costs and the shape of the search.
struct Problem {
  const PartitionCosts* costs;
  int layers;                // L
  int stages;                // P
  int units;                 // U
  std::vector<int> allowed;  // ascending, unique, each in [1, U]
  bool stage_grows_with_layers;
  // Every A starts here, above a known bound: terms above the bound are skipped (+inf: none).
  double start_ms = kInf;
  // When not empty: stage index k's replica count is fixed[k] (PartitionWithReplicas), and
  // `allowed` is unused.
  std::vector<int> fixed = {};
};

// Lists of ints, one per index m, stored one after another (a DP asks for P + 1 of them).
struct Lists {
  std::vector<int> values;
  std::vector<std::size_t> ends;  // ends[m]: one past list m's last value
  std::span<const int> Of(int m) const {
    const std::size_t begin = m == 0 ? 0 : ends[static_cast<std::size_t>(m) - 1];
    return {values.data() + begin, ends[static_cast<std::size_t>(m)] - begin};
  }
};

// Of(m): the sums of exactly m allowed counts that are at most U, ascending. Built from the
// sums themselves, not by scanning every v <= U: the uniform variant has one per m.
Lists ReachableSums(const Problem& p) {
  Lists reach;
  reach.values = {0};
  reach.ends = {1};
  std::vector<char> seen(static_cast<std::size_t>(p.units) + 1, 0);
  for (int m = 1; m <= p.stages; ++m) {
    const std::size_t begin = reach.values.size();
    for (std::size_t at = begin - reach.Of(m - 1).size(); at < begin; ++at) {
      const int v = reach.values[at];
      for (int r : p.allowed) {
        if (v + r > p.units) break;  // allowed is ascending
        if (!seen[v + r]) {
          seen[v + r] = 1;
          reach.values.push_back(v + r);
        }
      }
    }
    std::sort(reach.values.begin() + static_cast<std::ptrdiff_t>(begin), reach.values.end());
    for (std::size_t at = begin; at < reach.values.size(); ++at) seen[reach.values[at]] = 0;
    reach.ends.push_back(reach.values.size());
  }
  return reach;
}

// The unit counts the DP visits: per k, the u that split into k allowed counts with the other
// U - u splitting into P - k (ascending). slot[u]: a dense index over the counts useful for
// some k, -1 for the rest, so that the memo has no U-sized dimension (the uniform variant has
// P + 1 slots).
struct UnitCounts {
  Lists useful;  // per k, ascending
  std::vector<int> slot;
  int num_slots = 0;
};

// The replica counts stage index k - 1 may take.
std::span<const int> AllowedAt(const Problem& p, int k) {
  if (p.fixed.empty()) return p.allowed;
  return {&p.fixed[static_cast<std::size_t>(k) - 1], 1};
}

// With fixed counts, k stages hold exactly the first k counts' sum.
UnitCounts FixedUnitCounts(const Problem& p) {
  UnitCounts counts;
  counts.slot.assign(p.units + 1, -1);
  int u = 0;
  for (int k = 0; k <= p.stages; ++k) {
    if (k > 0) u += p.fixed[static_cast<std::size_t>(k) - 1];
    counts.useful.values.push_back(u);
    counts.useful.ends.push_back(counts.useful.values.size());
    counts.slot[u] = counts.num_slots++;
  }
  return counts;
}

UnitCounts FindUnitCounts(const Problem& p) {
  if (!p.fixed.empty()) return FixedUnitCounts(p);
  const Lists reach = ReachableSums(p);
  UnitCounts counts;
  counts.slot.assign(p.units + 1, -1);
  for (int k = 0; k <= p.stages; ++k) {
    const std::span<const int> rest = reach.Of(p.stages - k);
    for (int u : reach.Of(k)) {
      if (!std::binary_search(rest.begin(), rest.end(), p.units - u)) continue;
      counts.useful.values.push_back(u);
      if (counts.slot[u] < 0) counts.slot[u] = counts.num_slots++;
    }
    counts.useful.ends.push_back(counts.useful.values.size());
  }
  return counts;
}

// The explicit memo: A(j, u, k), the boundary costs BoundaryMs(last_of_left, unit) at useful
// units, and the unit counts that index them. Rows run over layers, so that the scan over
// first layers reads contiguous memory. A has one row per useful state (k, u), and one shared
// row of +inf, A's value outside useful states: the uniform variant fills (P + 1)·(L + 1)
// entries, not (P + 1)²·(L + 1).
class Memo {
 public:
  Memo(const Problem& p, UnitCounts counts)
      : row_(static_cast<std::size_t>(p.layers) + 1),
        counts_(std::move(counts)),
        a_row_(static_cast<std::size_t>(p.stages + 1) * counts_.num_slots, 0),
        boundary_ms_(static_cast<std::size_t>(counts_.num_slots) * row_, kInf) {
    std::size_t rows = 1;  // row 0: +inf
    for (int k = 0; k <= p.stages; ++k) {
      for (int u : counts_.useful.Of(k)) a_row_[ARowIndex(k, u)] = rows++;
    }
    a_ms_.assign(rows * row_, kInf);
    before_ms_.assign(rows * row_, kInf);
    jump_.assign(rows * row_, -1);
    for (int unit = 1; unit < p.units; ++unit) {
      if (counts_.slot[unit] < 0) continue;
      p.costs->BoundaryRow(unit, {&boundary_ms_[BoundaryRowStart(unit)],
                                  static_cast<std::size_t>(std::max(0, p.layers - 1))});
    }
  }

  bool Useful(int k, int u) const { return counts_.slot[u] >= 0 && a_row_[ARowIndex(k, u)] != 0; }
  std::span<const int> UsefulUnits(int k) const { return counts_.useful.Of(k); }
  // A(j, u, k) for j in [0, L]. REQUIRES: Useful(k', u) for some k'; so below.
  std::span<const double> ARow(int u, int k) const { return {&a_ms_[ARowStart(k, u)], row_}; }
  double A(int j, int u, int k) const { return ARow(u, k)[static_cast<std::size_t>(j)]; }
  // REQUIRES: Useful(k, u).
  void SetA(int j, int u, int k, double ms) {
    a_ms_[ARowStart(k, u) + static_cast<std::size_t>(j)] = ms;
  }
  // REQUIRES: Useful(k, u).
  std::span<double> MutableARow(int u, int k) { return {&a_ms_[ARowStart(k, u)], row_}; }
  // Before(u, k)[i]: the value before a last stage from layer i, after k stages on u units:
  // A(i, u, k) and, when k > 0 and i > 0, the boundary at unit u after layer i - 1.
  // Jumps(u, k)[i]: the largest i' <= i whose Before is below start_ms, -1 if none.
  // REQUIRES: SetJumps(u, k) ran.
  std::span<const double> Before(int u, int k) const {
    return {&before_ms_[ARowStart(k, u)], row_};
  }
  std::span<const int> Jumps(int u, int k) const { return {&jump_[ARowStart(k, u)], row_}; }
  // REQUIRES: Useful(k, u), and A(j, u, k) set for every j.
  void SetJumps(int u, int k, double start_ms) {
    std::span<const double> a = ARow(u, k);
    std::span<const double> boundary = BoundaryRow(u);
    double* before = &before_ms_[ARowStart(k, u)];
    int* jump = &jump_[ARowStart(k, u)];
    int last = -1;
    for (std::size_t i = 0; i < row_; ++i) {
      double before_ms = a[i];
      if (k > 0 && i > 0) before_ms = std::max(before_ms, boundary[i - 1]);
      if (before_ms < start_ms) last = static_cast<int>(i);
      before[i] = before_ms;
      jump[i] = last;
    }
  }
  // BoundaryMs(last, unit) for last in [0, L - 2]; +inf elsewhere and at unit 0 and U.
  std::span<const double> BoundaryRow(int unit) const {
    return {&boundary_ms_[BoundaryRowStart(unit)], row_};
  }

 private:
  std::size_t ARowIndex(int k, int u) const {
    return static_cast<std::size_t>(k) * static_cast<std::size_t>(counts_.num_slots) +
           static_cast<std::size_t>(counts_.slot[u]);
  }
  std::size_t ARowStart(int k, int u) const { return a_row_[ARowIndex(k, u)] * row_; }
  std::size_t BoundaryRowStart(int unit) const {
    return static_cast<std::size_t>(counts_.slot[unit]) * row_;
  }

  std::size_t row_;  // L + 1
  UnitCounts counts_;
  std::vector<std::size_t> a_row_;  // per (k, slot): the row of A, 0 (all +inf) if not useful
  std::vector<double> a_ms_;
  std::vector<double> before_ms_;  // per row of A: see Before
  std::vector<int> jump_;          // per row of A: see Jumps
  std::vector<double> boundary_ms_;
};

// Whether the term of the recurrence for the last stage [i, j - 1] on r units ending at unit
// u, as stage k - 1, is at most limit_ms: the prefix and the boundary first, then the stage
// (StageMs <= limit exactly when it is below the next double up).
bool TermWithin(const Problem& p, const Memo& memo, int i, int j, int u, int r, int k,
                double limit_ms) {
  if (memo.A(i, u - r, k - 1) > limit_ms) return false;
  if (k > 1 && memo.BoundaryRow(u - r)[static_cast<std::size_t>(i - 1)] > limit_ms) return false;
  const double above_ms = std::nextafter(limit_ms, kInf);
  return p.costs->StageMsBelow(i, j - 1, r, u - r, k - 1, p.stages, above_ms) <= limit_ms;
}

// What a state (j, u, k) reads of the filled entries with k - 1 stages on u - r units, for a
// last stage on r units: the same for every j.
struct Source {
  int r;
  std::span<const double> before_ms;  // Memo::Before(u - r, k - 1)
  std::span<const int> jumps;         // Memo::Jumps(u - r, k - 1)
};

// min(best_ms, the terms for every first layer i of a last stage on src.r units), trying the
// shortest stage first. StageMs (the expensive part) is skipped where the prefix alone reaches
// best_ms, and when stages grow with layers the scan ends at the first stage that does. Only a
// stage below best_ms is read exactly (StageMsBelow): one at or above it changes nothing.
double BestFirstLayer(const Problem& p, const Source& src, int j, int u, int k, double best_ms) {
  const int r = src.r;
  // The jumps pass over the first layers whose prefix alone reaches start_ms >= best_ms.
  for (int i = src.jumps[static_cast<std::size_t>(j - 1)]; i >= k - 1;
       i = i > 0 ? src.jumps[static_cast<std::size_t>(i - 1)] : -1) {
    const double before_ms = src.before_ms[static_cast<std::size_t>(i)];
    if (before_ms >= best_ms) continue;
    double stage_ms = p.costs->StageMsBelow(i, j - 1, r, u - r, k - 1, p.stages, best_ms);
    if (stage_ms < best_ms) {
      best_ms = std::max(before_ms, stage_ms);
    } else if (p.stage_grows_with_layers) {
      break;  // every longer stage costs at least stage_ms
    }
  }
  return best_ms;
}

// A(j, u, k) for every j, from the filled entries with k - 1 stages.
void FillRow(const Problem& p, Memo& memo, int u, int k, std::vector<Source>& sources) {
  sources.clear();
  for (int r : AllowedAt(p, k)) {
    if (r > u) break;
    if (!memo.Useful(k - 1, u - r)) continue;
    sources.push_back({r, memo.Before(u - r, k - 1), memo.Jumps(u - r, k - 1)});
  }
  std::span<double> a = memo.MutableARow(u, k);
  for (int j = k; j <= p.layers - (p.stages - k); ++j) {
    double best_ms = p.start_ms;
    for (const Source& src : sources) best_ms = BestFirstLayer(p, src, j, u, k, best_ms);
    a[static_cast<std::size_t>(j)] = best_ms;
  }
}

// Fills A in order of k. REQUIRES: memo.Useful(P, U).
void FillMemo(const Problem& p, Memo& memo) {
  memo.SetA(0, 0, 0, 0.0);
  memo.SetJumps(0, 0, p.start_ms);
  std::vector<Source> sources;
  for (int k = 1; k <= p.stages; ++k) {
    for (int u : memo.UsefulUnits(k)) FillRow(p, memo, u, k, sources);
    for (int u : memo.UsefulUnits(k)) memo.SetJumps(u, k, p.start_ms);
  }
}

// The last of k stages placing [0, j) on [0, u) within `limit_ms`, smallest (first layer,
// replicas) first. REQUIRES: A(j, u, k) <= limit_ms.
Stage PickLastStage(const Problem& p, const Memo& memo, int j, int u, int k, double limit_ms) {
  for (int i = k - 1; i < j; ++i) {
    for (int r : AllowedAt(p, k)) {
      if (r > u) break;
      if (!memo.Useful(k - 1, u - r)) continue;
      if (TermWithin(p, memo, i, j, u, r, k, limit_ms)) return Stage{i, j - 1, r, u - r};
    }
  }
  TRIDENT_CHECK(false) << "no stage " << k - 1 << " ends at layer " << j - 1 << " and unit "
                       << u - 1 << " within " << limit_ms << " ms; the costs are not pure";
  return Stage{};
}

std::vector<Stage> ReadBack(const Problem& p, const Memo& memo, double bottleneck_ms) {
  std::vector<Stage> stages(static_cast<std::size_t>(p.stages));
  int j = p.layers;
  int u = p.units;
  for (int k = p.stages; k >= 1; --k) {
    Stage stage = PickLastStage(p, memo, j, u, k, bottleneck_ms);
    stages[static_cast<std::size_t>(k - 1)] = stage;
    j = stage.first_layer;
    u = stage.first_unit;
  }
  return stages;
}

Partition Solve(const Problem& p) {
  if (p.stages > p.layers) return Partition{};
  UnitCounts counts = FindUnitCounts(p);
  if (counts.useful.Of(p.stages).empty()) return Partition{};  // holds U alone, if anything
  Memo memo(p, std::move(counts));
  FillMemo(p, memo);
  double bottleneck_ms = memo.A(p.layers, p.units, p.stages);
  if (!(bottleneck_ms < p.start_ms)) return Partition{};  // +inf, or nothing within the bound
  return Partition{ReadBack(p, memo, bottleneck_ms), bottleneck_ms};
}

}  // namespace

std::string Partition::ToString() const {
  if (!feasible()) return "infeasible";
  std::ostringstream out;
  for (const Stage& s : stages) {
    out << "[" << s.first_layer << "-" << s.last_layer << "]x" << s.replicas << "@" << s.first_unit
        << " ";
  }
  out << "bottleneck " << bottleneck_ms << " ms";
  return out.str();
}

Partition PartitionUniform(const PartitionCosts& costs, int num_stages, int replicas) {
  TRIDENT_CHECK(num_stages >= 1 && replicas >= 1)
      << "num_stages " << num_stages << ", replicas " << replicas;
  TRIDENT_CHECK(replicas <= INT_MAX / num_stages) << num_stages << " x " << replicas;
  return Solve(Problem{&costs,
                       costs.NumLayers(),
                       num_stages,
                       num_stages * replicas,
                       {replicas},
                       costs.StageMsGrowsWithLayers()});
}

// With start_ms = the next double above the bound, each A becomes min(A, start_ms): exact
// wherever A <= bound, above the bound elsewhere. When the optimum is within the bound, every
// A the read-back compares with it is therefore exact or above it too, and the stages are
// those of the unbounded DP.
Partition PartitionUniform(const PartitionCosts& costs, int num_stages, int replicas,
                           double bound_ms) {
  if (!(bound_ms < kInf)) return PartitionUniform(costs, num_stages, replicas);
  TRIDENT_CHECK(num_stages >= 1 && replicas >= 1)
      << "num_stages " << num_stages << ", replicas " << replicas;
  TRIDENT_CHECK(replicas <= INT_MAX / num_stages) << num_stages << " x " << replicas;
  Problem problem{&costs,
                  costs.NumLayers(),
                  num_stages,
                  num_stages * replicas,
                  {replicas},
                  costs.StageMsGrowsWithLayers(),
                  std::nextafter(bound_ms, kInf)};
  Partition bounded = Solve(problem);
  return bounded.feasible() ? bounded : PartitionUniform(costs, num_stages, replicas);
}

Partition PartitionUniformAbove(const PartitionCosts& costs, const Partition& below, int num_stages,
                                int replicas) {
  if (!below.feasible()) return below;  // every partition is infeasible under `lower` already
  const double bound_ms = BottleneckOf(costs, below.stages);
  if (bound_ms == below.bottleneck_ms) return below;
  return PartitionUniform(costs, num_stages, replicas, bound_ms);
}

double BottleneckOf(const PartitionCosts& costs, const std::vector<Stage>& stages) {
  if (stages.empty()) return kInf;
  const int num_stages = static_cast<int>(stages.size());
  double ms = 0;
  for (int s = 0; s < num_stages; ++s) {
    const Stage& st = stages[static_cast<std::size_t>(s)];
    ms = std::max(ms, costs.StageMs(st.first_layer, st.last_layer, st.replicas, st.first_unit, s,
                                    num_stages));
    if (s > 0) ms = std::max(ms, costs.BoundaryMs(st.first_layer - 1, st.first_unit));
  }
  return ms;
}

Partition PartitionReplicated(const PartitionCosts& costs, int num_stages, int units,
                              const std::vector<int>& allowed_replicas) {
  TRIDENT_CHECK(num_stages >= 1 && units >= 0)
      << "num_stages " << num_stages << ", units " << units;
  std::vector<int> allowed;
  for (int r : allowed_replicas) {
    TRIDENT_CHECK(r >= 1) << "allowed replica count " << r;
    if (r <= units) allowed.push_back(r);
  }
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  return Solve(Problem{&costs, costs.NumLayers(), num_stages, units, std::move(allowed),
                       costs.StageMsGrowsWithLayers()});
}

Partition PartitionWithReplicas(const PartitionCosts& costs, const std::vector<int>& replicas) {
  TRIDENT_CHECK(!replicas.empty()) << "no stages";
  int units = 0;
  for (int r : replicas) {
    TRIDENT_CHECK(r >= 1) << "replica count " << r;
    units += r;
  }
  return Solve(Problem{&costs,
                       costs.NumLayers(),
                       static_cast<int>(replicas.size()),
                       units,
                       {},
                       costs.StageMsGrowsWithLayers(),
                       kInf,
                       replicas});
}

}  // namespace trident
