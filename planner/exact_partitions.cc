#include "planner/exact_partitions.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "core/replica_lanes.h"
#include "planner/lane_bound.h"
#include "planner/window_bound.h"

namespace trident::search_internal {
namespace {

// Stage s − 1, for the pair bound of it and stage s (planner/lane_bound.h, PairBoundOf).
struct Previous {
  double arrive_ms = 0, drain_ms = 0, round_trip_ms = 0;  // its LaneBoundInput's
  double fwd_ms = 0, bwd_ms = 0, send_ms = 0;
  int replicas = 1, warm_up = 0;
};

// What the placed stages 0..s−1 leave to stage s.
struct Prefix {
  int stage = 0, first_layer = 0, first_unit = 0;
  double arrive_ms = 0;        // Σ (F + send): when a forward can first reach stage s
  double drain_ms = 0;         // Σ (B + send): a gradient's way back to stage 0
  double first_weight_ms = 0;  // W of stage 0 (split backward)
  double bound_ms = 0;         // the placed stages' largest makespan bound
  Tail tail;
  WarmUpRule warm_ups;
  Previous previous;
};

// The prefix's figures every bound of its completions grows with, given the stage, first layer,
// first unit and warm-up state (planner/lane_bound.h): its sums and maxima, and for the pair
// bound of stage s − 1 and s that stage's sums and times and its cycle r(w + 1) negated (the
// longer the cycle, the fewer its steps; none when its lanes run every forward first). A prefix
// at least as large in each that comes where an earlier one found nothing below the best finds
// nothing either.
using Signature = std::array<double, 15>;

double CycleOf(const Previous& previous, int micro_batches) {
  const int lane = LaneMicroBatches(micro_batches, previous.replicas, 0);
  if (previous.warm_up >= lane - 1) return std::numeric_limits<double>::infinity();
  return static_cast<double>(previous.replicas) * (previous.warm_up + 1);
}

Signature SignatureOf(const Prefix& p, int micro_batches) {
  const Previous& q = p.previous;
  return {p.arrive_ms,
          p.drain_ms,
          p.first_weight_ms,
          p.bound_ms,
          p.tail.optimizer_ms,
          p.tail.gather_ms,
          p.tail.exposed_ms,
          p.tail.update_sync_ms,
          q.arrive_ms,
          q.drain_ms,
          q.round_trip_ms,
          q.fwd_ms,
          q.bwd_ms,
          q.send_ms,
          -CycleOf(q, micro_batches)};
}

bool AtLeast(const Signature& a, const Signature& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < b[i]) return false;
  }
  return true;
}

// The configuration less pp, whose free-replica spaces share a least-units table.
LeastUnitsCache::Family FamilyOf(const PartitionSpace& space) {
  Config c = space.config;
  c.pp = 0;
  return {space.stage_costs, c.Key(), c.micro_batches, space.units};
}

class Enumerator {
 public:
  Enumerator(const PartitionSpace& space, const double* best_ms,
             const std::function<void(std::vector<PlanStage>)>& leaf, LeastUnitsCache* cache)
      : bounds_(space),
        space_(space),
        c_(space.config),
        sc_(*space.stage_costs),
        best_ms_(best_ms),
        leaf_(leaf),
        layers_(sc_.NumLayers()),
        stages_(c_.pp),
        cache_(cache) {}

  int64_t Run() {
    if (RestMs(-1, space_.units, 0) >= *best_ms_ || !LeastUnits()) return 1;
    Dfs(Prefix{});
    return branches_;
  }

 private:
  // The replica counts stage s may take from unit u: the position's, or (free) from what
  // leaves the later stages at most M each up to what leaves them one each, at most M; the
  // last stage takes every unit left, if at most M.
  std::pair<int, int> ReplicaRange(int s, int u) const {
    if (!bounds_.FreeReplicas()) {
      const int r = space_.replicas[static_cast<size_t>(s)];
      return {r, r};
    }
    const int m = c_.micro_batches, later = stages_ - s - 1;
    if (s == stages_ - 1) {
      return space_.units - u <= m ? std::pair(space_.units - u, space_.units - u)
                                   : std::pair(1, 0);
    }
    return {std::max(1, space_.units - u - later * m), std::min(space_.units - u - later, m)};
  }

  // The space's least-units table; with free replicas first its family's (shared), which skips
  // most configurations for the price of a few rows. False when the positions cannot hold the
  // layers on the units.
  bool LeastUnits() {
    if (bounds_.FreeReplicas()) {
      std::vector<std::vector<int>>& shared = cache_->tables[FamilyOf(space_)];
      Extend(&shared, /*shared=*/true);
      if (shared[static_cast<size_t>(stages_)][0] > space_.units) return false;
    }
    Extend(&least_units_, /*shared=*/false);
    return LeastUnitsOf(0, 0) <= space_.units;
  }

  // The fewest units on which stages q.. can hold layers [a, L).
  int LeastUnitsOf(int q, int a) const {
    return least_units_[static_cast<size_t>(stages_ - q)][static_cast<size_t>(a)];
  }

  void Extend(std::vector<std::vector<int>>* table, bool shared) const {
    if (table->empty()) {
      table->emplace_back(static_cast<size_t>(layers_) + 1, kNever);
      table->back()[static_cast<size_t>(layers_)] = 0;
    }
    while (static_cast<int>(table->size()) <= stages_) {
      table->push_back(NextRow(static_cast<int>(table->size()), table->back(), shared));
    }
  }

  // Row k (the last k positions) from row k − 1. Shared: a stage k positions from the end of a
  // pipeline of any depth, at its Slot {0, k}, on any count up to the units less one per later
  // stage, with no sends counted; otherwise stage pp − k of this space from its first layer on.
  std::vector<int> NextRow(int k, const std::vector<int>& next, bool shared) const {
    const bool free = bounds_.FreeReplicas();
    const int q = stages_ - k;
    const int u = free ? -1 : bounds_.FixedFirstUnit(q);
    const auto [r_low, r_high] =
        !free ? ReplicaRange(q, u)
              : std::pair(
                    1, std::min(c_.micro_batches, space_.units - (shared ? k - 1 : stages_ - 1)));
    const double sends_ms = shared ? 0 : q * bounds_.CheapestSendMs(0);
    const bool split = bounds_.Split();
    std::vector<int> row(static_cast<size_t>(layers_) + 1, kNever);
    for (int a = shared ? 0 : q; a <= layers_ - k; ++a) {
      const Slot slot = shared ? Slot{0, k, a == 0, k == 1} : bounds_.SlotOf(q);
      const RangeTimes before = a > 0 ? sc_.Times(0, a - 1) : RangeTimes{};
      const double arrive_ms = before.fwd_ms + sends_ms;
      const double drain_ms = before.bwd_input_ms + (split ? 0 : before.bwd_weight_ms) + sends_ms;
      for (int b = k == 1 ? layers_ - 1 : a; b <= layers_ - k; ++b) {
        const int r = bounds_.LeastReplicas(a, b, slot, u, r_low, r_high, arrive_ms, drain_ms,
                                            Tail{}, *best_ms_);
        // A later b needs no fewer replicas, and the later positions a unit each at least.
        if (r == kNever || r + (k - 1) >= row[static_cast<size_t>(a)]) break;
        const int rest = next[static_cast<size_t>(b) + 1];
        if (rest != kNever)
          row[static_cast<size_t>(a)] = std::min(row[static_cast<size_t>(a)], r + rest);
      }
    }
    return row;
  }

  // The simple lane bound, which only grows with b: the stage's m micro-batches after the
  // placed stages' forwards (and, unless split, backwards).
  double SimpleLaneMs(const Prefix& p, const RangeTimes& t, int m) const {
    if (bounds_.Pipedream()) return m * t.Total();
    return p.arrive_ms + (bounds_.Split() ? 0 : p.drain_ms) + m * t.Total();
  }

  // Stage s on layers [p.first_layer, b] and r replicas (warm-up w) as planner/lane_bound.h
  // sees its lane: the round trip through the layers after b, with the send after b and at
  // least the cheapest send on each later boundary.
  LaneBoundInput LaneInputOf(const Prefix& p, int b, int r, int w, double send_ms) const {
    const RangeTimes t = sc_.Times(p.first_layer, b);
    const bool split = bounds_.Split();
    LaneBoundInput in;
    in.kind = c_.schedule;
    in.pp = stages_;
    in.micro_batches = LaneMicroBatches(c_.micro_batches, r, 0);
    in.warm_up = w;
    in.stage = {t.fwd_ms, t.bwd_input_ms, t.bwd_weight_ms};
    if (!split) in.stage = {t.fwd_ms, t.bwd_input_ms + t.bwd_weight_ms, 0};
    in.arrive_ms = p.arrive_ms;
    in.drain_ms = p.drain_ms + (split && p.stage > 0 ? p.first_weight_ms : 0);
    if (b + 1 < layers_) {
      const RangeTimes rest = sc_.Times(b + 1, layers_ - 1);
      in.round_trip_ms = rest.fwd_ms + rest.bwd_input_ms + (split ? 0 : rest.bwd_weight_ms) +
                         2 * send_ms + 2 * (stages_ - p.stage - 2) * bounds_.CheapestSendMs(b + 1);
    }
    return in;
  }

  // Stage s's own bound on the makespan and, through its gradient sync, on the step; with the
  // stage before it, their pair bound (1f1b, zb_h1).
  double StageBoundMs(const Prefix& p, const LaneBoundInput& in, int r, double sync_ms) const {
    if (bounds_.Pipedream()) return in.micro_batches * (in.stage.fwd_ms + in.stage.bwd_ms);
    const LaneBound lane = LaneBoundOf(in);
    double bound = std::max(lane.makespan_ms, lane.lane_end_ms + sync_ms);
    if (p.stage > 0 && c_.schedule != ScheduleKind::kGpipe) {
      const Previous& q = p.previous;
      PairBoundInput pair;
      pair.micro_batches = c_.micro_batches;
      pair.replicas = q.replicas;
      pair.warm_up = q.warm_up;
      pair.next_replicas = r;
      pair.next_warm_up = in.warm_up;
      pair.stage = {q.fwd_ms, q.bwd_ms, 0};
      pair.next = in.stage;
      pair.send_ms = q.send_ms;
      pair.arrive_ms = q.arrive_ms;
      pair.round_trip_ms = q.round_trip_ms;
      pair.drain_ms = q.drain_ms;
      bound = std::max(bound, PairBoundOf(pair));
    }
    return bound;
  }

  // Lower bound of the later stages' lanes: after `base_ms`, the layers after b on the units
  // left (b = −1: all of them).
  double RestMs(int b, int units_left, double base_ms) const {
    if (b + 1 >= layers_) return 0;
    const double rest = c_.micro_batches * sc_.Times(b + 1, layers_ - 1).Total() / units_left;
    return (bounds_.Pipedream() ? 0 : base_ms) + rest;
  }

  // The prefix after stage p.stage on layers [p.first_layer, b] and r replicas.
  Prefix Next(const Prefix& p, int b, int r, double send_ms, double bound_ms, const Tail& tail,
              const WarmUpRule& warm_ups, const LaneBoundInput& lane) const {
    const RangeTimes t = sc_.Times(p.first_layer, b);
    Prefix next = p;
    ++next.stage;
    next.first_layer = b + 1;
    next.first_unit = p.first_unit + r;
    next.arrive_ms += t.fwd_ms + send_ms;
    next.drain_ms += t.bwd_input_ms + (bounds_.Split() ? 0 : t.bwd_weight_ms) + send_ms;
    if (p.stage == 0) next.first_weight_ms = t.bwd_weight_ms;
    next.bound_ms = bound_ms;
    next.tail = tail;
    next.warm_ups = warm_ups;
    next.previous = {lane.arrive_ms,
                     lane.drain_ms,
                     lane.round_trip_ms,
                     lane.stage.fwd_ms,
                     lane.stage.bwd_ms,
                     send_ms,
                     r,
                     lane.warm_up};
    return next;
  }

  // Completions of p that reached no leaf (every one bounded away), by where p ends: the best
  // only falls, so a prefix at least as large there reaches none either.
  using Where = std::tuple<int, int, int, int64_t>;
  static Where WhereOf(const Prefix& p) {
    return {p.stage, p.first_layer, p.first_unit, p.warm_ups.State()};
  }
  bool Futile(const Prefix& p) const {
    auto it = futile_.find(WhereOf(p));
    if (it == futile_.end()) return false;
    const Signature signature = SignatureOf(p, c_.micro_batches);
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const Signature& known) { return AtLeast(signature, known); });
  }
  void RememberFutile(const Prefix& p) {
    std::vector<Signature>& known = futile_[WhereOf(p)];
    const Signature signature = SignatureOf(p, c_.micro_batches);
    std::erase_if(known, [&](const Signature& k) { return AtLeast(k, signature); });
    known.push_back(signature);
  }

  void Dfs(const Prefix& p) {
    if (p.stage > 0 && Futile(p)) return;
    const int64_t leaves = leaves_;
    Search(p);
    if (p.stage > 0 && leaves_ == leaves) RememberFutile(p);
  }

  // The most replicas stage s on layers [a, b] may take and leave the later stages room: the
  // units their least_units_ need, and the units on which the layers after b keep the rest
  // bound under the best (one wider than it gives, so rounding never drops a count).
  int MostReplicas(const Prefix& p, int b, int r_high) const {
    if (b + 1 >= layers_) return r_high;
    const int left = space_.units - p.first_unit;
    r_high = std::min(r_high, left - LeastUnitsOf(p.stage + 1, b + 1));
    const RangeTimes t = sc_.Times(p.first_layer, b);
    const bool split = bounds_.Split();
    const double base =
        bounds_.Pipedream()
            ? 0
            : p.arrive_ms + t.fwd_ms + (split ? 0 : p.drain_ms + t.bwd_input_ms + t.bwd_weight_ms);
    const double room = *best_ms_ - p.tail.Total() - base;
    if (room <= 0) return 0;
    const double rest = c_.micro_batches * sc_.Times(b + 1, layers_ - 1).Total();
    return static_cast<int>(std::min<double>(r_high, std::ceil(std::max(0.0, left - rest / room))));
  }

  void Search(const Prefix& p) {
    ++branches_;
    const int s = p.stage, a = p.first_layer;
    const auto [r_low, r_high] = ReplicaRange(s, p.first_unit);
    const int b_low = s == stages_ - 1 ? layers_ - 1 : a;
    const int b_high = layers_ - (stages_ - s);
    for (int b = b_low; b <= b_high; ++b) {
      // No count that fails LeastReplicas passes with more layers: once none is left, stop.
      const int r_from = bounds_.LeastReplicas(a, b, bounds_.SlotOf(s), p.first_unit, r_low, r_high,
                                               p.arrive_ms, p.drain_ms, p.tail, *best_ms_);
      if (r_from == kNever) break;
      const int r_to = MostReplicas(p, b, r_high);
      for (int r = r_from; r <= r_to; ++r) Try(p, b, r);
    }
  }

  // Stage p.stage on layers [p.first_layer, b] and r replicas: a leaf, a branch, or nothing.
  void Try(const Prefix& p, int b, int r) {
    const int s = p.stage, a = p.first_layer, u = p.first_unit;
    const bool last = s == stages_ - 1;
    const int units_left = space_.units - u - r;
    if (!last && LeastUnitsOf(s + 1, b + 1) > units_left) return;
    const int m = LaneMicroBatches(c_.micro_batches, r, 0);
    const double grows = std::max(p.bound_ms, SimpleLaneMs(p, sc_.Times(a, b), m));
    if (grows + p.tail.Total() >= *best_ms_) return;
    const StageTerms terms = bounds_.Terms(a, b, s, r, u);
    if (terms.memory_bytes > space_.memory_limit_bytes) return;
    WarmUpRule warm_ups = p.warm_ups;
    const int w = warm_ups.Next(stages_, s, c_.micro_batches, r);
    const double send_ms = last ? 0 : bounds_.SendMs(b, u + r);
    const LaneBoundInput lane = LaneInputOf(p, b, r, w, send_ms);
    const double bound = std::max(p.bound_ms, StageBoundMs(p, lane, r, terms.sync_ms));
    const Tail tail = p.tail.Max(terms.tail);
    if (bound + tail.Total() >= *best_ms_) return;
    stages_out_.push_back({a, b - a + 1, r, c_.recompute, 0, 0});
    if (last) {
      // A leaf the pair and window bounds rule out still counts as reached: they read every
      // stage, which the futile prefixes' figures do not.
      ++leaves_;
      const SimulationInput whole = WholeInput();
      const double room_ms = *best_ms_ - tail.Total();
      if (PairsBoundMs(whole) < room_ms && WindowsBoundMs(whole, room_ms) < room_ms) {
        leaf_(stages_out_);
      }
    } else {
      const Prefix next = Next(p, b, r, send_ms, bound, tail, warm_ups, lane);
      const bool split = bounds_.Split();
      const double rest = RestMs(b, units_left, next.arrive_ms + (split ? 0 : next.drain_ms));
      if (std::max(bound, rest) + tail.Total() < *best_ms_) Dfs(next);
    }
    stages_out_.pop_back();
  }

  // The whole partition's stage times, sends and replicas as Simulate reads them.
  SimulationInput WholeInput() const {
    const bool split = bounds_.Split();
    SimulationInput in;
    int unit = 0;
    for (int q = 0; q < stages_; ++q) {
      const PlanStage& st = stages_out_[static_cast<size_t>(q)];
      const int last = st.first_layer + st.num_layers - 1;
      const RangeTimes t = sc_.Times(st.first_layer, last);
      in.stages.push_back(
          {t.fwd_ms, t.bwd_input_ms + (split ? 0 : t.bwd_weight_ms), split ? t.bwd_weight_ms : 0});
      in.replicas.push_back(st.replicas);
      unit += st.replicas;
      if (q + 1 < stages_) in.send_activation_ms.push_back(bounds_.SendMs(last, unit));
    }
    return in;
  }

  // The largest pair bound of any two positions of the whole partition (planner/lane_bound.h,
  // PairBoundOf); 0 but under 1f1b and zb_h1.
  double PairsBoundMs(const SimulationInput& whole) const {
    if (c_.schedule != ScheduleKind::k1F1B && c_.schedule != ScheduleKind::kZbH1) return 0;
    std::vector<PairBoundInput> at(static_cast<size_t>(stages_));
    WarmUpRule warm_ups;
    double arrive = 0, drain = 0;
    for (int q = 0; q < stages_; ++q) {
      const size_t i = static_cast<size_t>(q);
      PairBoundInput& in = at[i];
      in.micro_batches = c_.micro_batches;
      in.replicas = whole.replicas[i];
      in.warm_up = warm_ups.Next(stages_, q, c_.micro_batches, in.replicas);
      in.stage = {whole.stages[i].fwd_ms, whole.stages[i].bwd_ms, 0};
      in.send_ms = q + 1 < stages_ ? whole.send_activation_ms[i] : 0;
      in.arrive_ms = arrive;
      in.drain_ms = drain + (q > 0 ? whole.stages[0].weight_ms : 0);
      arrive += in.stage.fwd_ms + in.send_ms;
      drain += in.stage.bwd_ms + in.send_ms;
    }
    double round_trip = 0, bound = 0;
    for (int p = stages_ - 1; p >= 0; --p) {
      PairBoundInput& in = at[static_cast<size_t>(p)];
      in.round_trip_ms = round_trip + 2 * in.send_ms;
      round_trip = in.round_trip_ms + in.stage.fwd_ms + in.stage.bwd_ms;
      StageTimes next;
      for (int t = p + 1; t < stages_; ++t) {
        const PairBoundInput& later = at[static_cast<size_t>(t)];
        next.fwd_ms += later.stage.fwd_ms;
        next.bwd_ms += later.stage.bwd_ms;
        PairBoundInput pair = in;
        pair.next_replicas = later.replicas;
        pair.next_warm_up = later.warm_up;
        pair.next = next;
        bound = std::max(bound, PairBoundOf(pair));
        next.fwd_ms += later.send_ms;
        next.bwd_ms += later.send_ms;
      }
    }
    return bound;
  }

  // The largest window bound (planner/window_bound.h) of two neighbouring positions whose
  // replica counts differ, stopping once one reaches `enough_ms`; 0 under PipeDream. Such a
  // partition is replicated, so its lanes need the schedule's kind and sizes only.
  double WindowsBoundMs(SimulationInput whole, double enough_ms) const {
    if (c_.schedule == ScheduleKind::kPipeDream) return 0;
    const Schedule header{c_.schedule, stages_, 1, c_.micro_batches, bounds_.Split(), {}};
    whole.schedule = &header;
    double bound = 0;
    for (int q = 0; q + 1 < stages_ && bound < enough_ms; ++q) {
      if (whole.replicas[static_cast<size_t>(q)] == whole.replicas[static_cast<size_t>(q) + 1]) {
        continue;
      }
      StatusOr<double> window = WindowBoundMs(whole, q, q + 1);
      if (window.ok()) bound = std::max(bound, *window);  // else the simulation reports it
    }
    return bound;
  }

  const ExactBounds bounds_;
  const PartitionSpace& space_;
  const Config& c_;
  const StageCosts& sc_;
  const double* best_ms_;
  const std::function<void(std::vector<PlanStage>)>& leaf_;
  const int layers_;
  const int stages_;
  LeastUnitsCache* cache_;
  std::vector<std::vector<int>> least_units_;  // rows by positions from the end
  std::vector<PlanStage> stages_out_;
  std::map<Where, std::vector<Signature>> futile_;
  int64_t branches_ = 0;
  int64_t leaves_ = 0;
};

}  // namespace

int64_t EnumeratePartitionsBelow(const PartitionSpace& space, const double* best_ms,
                                 const std::function<void(std::vector<PlanStage>)>& leaf,
                                 LeastUnitsCache* cache) {
  return Enumerator(space, best_ms, leaf, cache).Run();
}

}  // namespace trident::search_internal
