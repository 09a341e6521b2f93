// Measured profiles: what each layer of a model costs on this machine's CPU, measured with the
// runtime's own layers and CPU backend (`trident profile MODEL --device cpu`).
//
// Each distinct layer kind is measured once (the transformer blocks of a model are identical,
// so one block stands for all of them) at every requested (micro-batch size, tp degree), and
// for each tp > 1 dividing the sequence also with sequence parallelism; the profile then lists the
// model's layer groups in order, each with its kind's entries, so the entries cover every layer
// exactly once, as an analytic profile does. How one measurement runs, and what each figure means:
// layer_bench.h; when it stops repeating: repeat_policy.h.
//
// Jobs of several ranks (under mpirun): `world` is the job's communicator, split into groups of
// tp consecutive ranks for each tp degree. Every group measures the same layer at the same
// time, so the machine is as busy as in a training job of that many ranks, and each repeat's
// times are the slowest rank's of the job (layer_bench.h): every rank returns the same profile.
// tp 1 needs no job: `world` may be null.

// The device description names the CPU model, the threads, the ranks of a job and a clock other
// than elapsed time: "AMD EPYC 7B13 (1 thread per rank, 2 ranks, thread CPU time)".
//
// Models with dropout > 0 are measured without dropout, which the runtime layers do not
// implement yet (they refuse such models; training one needs dropout: 0).
// Thread-safety: one call at a time per `world`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/profile.h"
#include "core/status.h"
#include "profiler/layer_bench.h"
#include "profiler/measured_options.h"
#include "runtime/comm/comm.h"

namespace trident {

// Reported before and after each turn of a measurement, for a progress display.
struct MeasureProgress {
  int done = 0;   // turns finished
  int total = 0;  // turns in the whole profile: passes x layers x sizes x tp degrees
  int pass = 1;   // this turn's pass, 1..passes
  int passes = 1;
  LayerKind kind = LayerKind::kGptBlock;
  int micro_batch = 1;
  int tp = 1;
  bool sequence_parallel = false;
  int cp = 1;
  const LayerMeasurement* result = nullptr;  // null before the turn; then every pass so far
};
using MeasureProgressFn = std::function<void(const MeasureProgress&)>;

// The measured profile of `model`, run on `compute` (options.device's backend; MakeCompute).
// Every rank of `world` calls it with the same arguments; with cuda, `world` is a NCCL world
// made with compute's stream (MakeWorldComm("nccl")). REQUIRES: model.Validate() ok. Fails with
// CheckMeasuredOptions's error, a Comm error, or Internal (see layer_bench.h).
StatusOr<Profile> MeasureProfile(const ModelSpec& model, const MeasuredProfileOptions& options,
                                 Compute& compute, Comm* world,
                                 const MeasureProgressFn& progress = {});

}  // namespace trident
