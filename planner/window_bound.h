// A lower bound on a flushing schedule's simulated makespan from a window of its positions
// [first, last] alone, for a search to rule out a partition before it simulates all of it.
// Checked against the simulator on random pipelines in tests/planner/lane_bound_test.cc.
//
// The window's lanes run their own lists (the whole pipeline's, as planner/simulator.h builds
// them), replayed as planner/simulator.h replays them, with the positions outside the window
// relaxed to delays nobody contends for:
//   before  F of micro-batch j on `first` starts no earlier than t0 = Σ_{q<first} (F_q + send_q)
//           (its input crosses the positions before), and the step ends no earlier than D after
//           B of j on `first` (the gradient crosses them back: Σ_{q<first} (B_q + send_q), and
//           W_0 when the schedule splits backward and first > 0);
//   after   B of j on `last` starts no earlier than the round trip through the later positions
//           after F of j on `last` ends (their forwards, backwards and the sends between, B_q
//           without W when split).
// Each relaxation drops a wait the real replay has and keeps every other, and an action starts
// when its lane and inputs allow, so no action of the window starts later in the real replay:
// the window's makespan is at most the pipeline's. Every action of the window waits, through
// its lane or its inputs, for a forward of `first`, so the window is replayed from 0 and
// shifted by t0; the positions after it are one lane per micro-batch, which nothing contends
// for. What it sees that the lane and pair bounds (planner/lane_bound.h) do not: lanes of
// neighbouring positions with different replica counts handing micro-batches to each other out
// of step, which slows the whole window's cadence.
//
// Thread safety: pure functions.
#pragma once

#include "core/status.h"
#include "planner/simulator.h"

namespace trident {

// The makespan of `pipeline`'s positions [first, last] with the others relaxed as above: one
// step of a flushing schedule (gpipe, 1f1b or zb_h1), its lanes as Simulate builds them
// (PipelineLanes), its stage times as Simulate reads them. REQUIRES 0 <= first <= last < pp and
// v = 1. InvalidArgument as PipelineLanes, or when the window's lanes wait on each other
// forever.
StatusOr<double> WindowBoundMs(const SimulationInput& pipeline, int first, int last);

}  // namespace trident
