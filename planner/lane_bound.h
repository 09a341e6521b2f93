// Lower bounds on a flushing schedule's simulated makespan from one lane (planner/simulator.h's
// semantics), for a search to prune partitions it has not simulated. Checked against the
// simulator on random stage times, link times and replica counts in
// tests/planner/lane_bound_test.cc.
//
// The lane: one replica of stage s (one stage per position, v = 1) running m micro-batches of
// its schedule's list with warm-up w (core/replica_lanes.h: the lane runs w + 1 forwards
// before its first backward under 1f1b and zb_h1, every forward first under gpipe, which is
// w = m − 1). F, B, W: the stage's forward, backward (the whole of it unless the schedule
// splits off W) and weight-gradient times. The other stages enter through three sums, each at
// most what the simulator spends (send_q: boundary q → q+1):
//   arrive  t0 = Σ_{q<s} (F_q + send_q)          no forward of s starts before its input has
//                                                 crossed stages 0..s−1
//   round trip RT = Σ_{q>s} (F_q + B_q) + 2·Σ_{q>=s} send_q
//                                                 B of a micro-batch starts at least RT after
//                                                 its F ends: the micro-batch goes forward
//                                                 through the later stages and its gradient comes
//                                                 back (B_q without W when split)
//   drain   D = Σ_{q<s} (B_q + send_q) (+ W_0 when split and s > 0)
//                                                 after the lane's last B its gradient still
//                                                 crosses stages s−1..0 (and stage 0 then runs
//                                                 that micro-batch's W)
// Replaying the lane alone with those release times gives, with x0 = t0 + max((w+1)·F, F + RT)
// the earliest start of its first backward:
//   1f1b, w < m − 1   the last F ends ≥ max(x0 + (m−w−1)(F+B), t0 + F + ⌊(m−1)/(w+1)⌋·(F+B+RT))
//                     (F of micro-batch i + w + 1 follows B of i in the list, and that B waits a
//                     round trip after F of i: a chain of cycles), last B ends ≥ that +
//                     max(RT, w·B) + B
//   gpipe, or w = m−1 last B ends ≥ max(x0 + m·B, t0 + m·F + RT + B)
//   zb_h1             the last F ends ≥ max(t0 + m·F + (m−1−w)·B + max(0, m−pp)·W,
//                                           x0 + (m−1−w)(F+B) when w < m − 1, the chain above),
//                     last B ends ≥ that + max(RT, w·B) + B, the lane ends ≥ that + W and
//                     ≥ x0 + (m−w−1)·F + m·(B + W)
// and makespan ≥ max(lane end, last B end + D). Example, 1f1b, 4 equal stages (F 1, B 2, free
// links), m 8, stage 0 (w 3): x0 = max(4, 1 + 9) = 10, last B ends ≥ 10 + 4·3 + 9 + 2 = 33,
// which is (m + pp − 1)(F + B): the makespan exactly. Every bound only falls as w grows, so a
// lane whose warm-up is lowered (core/replica_lanes.h) is bounded no lower.
//
// Thread safety: pure functions.
#pragma once

#include "core/schedule.h"
#include "planner/simulator.h"

namespace trident {

struct LaneBoundInput {
  ScheduleKind kind = ScheduleKind::k1F1B;  // gpipe, 1f1b or zb_h1
  int pp = 1;
  int micro_batches = 1;  // m of the lane
  int warm_up = 0;        // w of its position (WarmUpRule); min(w, m − 1) is used
  StageTimes stage;
  double arrive_ms = 0;
  double round_trip_ms = 0;
  double drain_ms = 0;
};

struct LaneBound {
  double lane_end_ms = 0;  // the lane's last action ends no earlier
  double makespan_ms = 0;  // the step's lanes end no earlier
};

LaneBound LaneBoundOf(const LaneBoundInput& in);

// Two positions p < t under 1f1b or zb_h1 (core/replica_lanes.h's lists: a lane's F of local
// micro-batch k follows its B of k − w − 1, and its B of i follows its F of i + w). In global
// ids, with r, w and r', w' the two positions' replicas and warm-ups, F_p(g) follows
// B_p(g − r(w+1)), which waits for B_t of the same id (through the positions between), which
// follows F_t(g − δ) and so F_p(g − δ), δ = r(w+1) − r'·w' (≥ 1: the warm-up rule keeps r'·w'
// below r(w+1) for every earlier position). So every δ ids F_p costs at least τ = F_p + F' + B' +
// B_p + 2·send_p, where F' and B' are the forwards and backwards of positions p+1..t with the
// sends between them (`next`), and with n = ⌊(M − 1 − r(w+1)) / δ⌋ + 1 such steps below the last
// id (each step's upper id at least r(w+1)):
//   makespan ≥ t0 + F_p + n·τ + RT_p + B_p + D_p
// (its last micro-batch then goes round and back). Nothing when p's lanes run every forward
// first (w = ⌈M / r⌉ − 1). Uniform replication gives δ = 2r for neighbours and the lane bound's
// m·(F + B); a position of many replicas after one of few can give δ = 1: with r 8, w 4 then
// r' 13, w' 3, every micro-batch waits for the one before it to go through both positions and
// back. Positions further apart cycle through more stages per step: a chain of stages of 13, 11
// and 8 replicas can be slower than any two neighbours show.
struct PairBoundInput {
  int micro_batches = 1;                    // M, the step's
  int replicas = 1, warm_up = 0;            // of position p
  int next_replicas = 1, next_warm_up = 0;  // of position t
  StageTimes stage, next;                   // p's F, B and p+1..t's (W folded in unless split)
  double send_ms = 0;                       // boundary p → p + 1
  double arrive_ms = 0, round_trip_ms = 0, drain_ms = 0;  // p's, as in LaneBoundInput
};

double PairBoundOf(const PairBoundInput& in);

}  // namespace trident
