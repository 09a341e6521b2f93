// What a measured profile is asked for, and the checks of such a request: the part of
// measured profiling that needs no device, so that `trident` (which links no device library)
// can check a request and `trident run` can choose the tp degrees it profiles. The
// measurement itself: measured_profile.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/model_spec.h"
#include "core/status.h"
#include "profiler/repeat_policy.h"

namespace trident {

// What a call's time is read from. kWall: elapsed time (what a training step is made of).
// kThreadCpu: the calling thread's CPU time, which leaves out the time other processes hold
// the core — steadier figures on a shared machine, equal to elapsed time on an idle one when
// the backend computes on the calling thread alone (one thread) and waits in collectives by
// polling (MPI over shared memory does).
enum class TimingClock { kWall, kThreadCpu };

struct MeasuredProfileOptions {
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> tps = {1};
  // Context-parallel degrees: each measured with every tp whose tp·cp divides the job's ranks.
  std::vector<int> cps = {1};
  int64_t seq_len = 0;  // 0: the model's max_seq_len
  // The layers' values and activations (fp32, or bf16 as the runtime's mixed precision: fp32
  // gradients and master weights); fp16 is not run.
  DType dtype = DType::kFp32;
  std::string device = "cpu";              // the compute backend's device: cpu or cuda
  int threads = 1;                         // compute threads per rank (cpu)
  TimingClock clock = TimingClock::kWall;  // kThreadCpu needs threads == 1
  RepeatPolicy repeats;                    // the whole of each measurement, over all passes
  // Turns each measurement takes: every pass measures every layer, micro-batch size and tp
  // degree once, with a share of the repeats, so each one is sampled over the whole time the
  // profile ran (a shared machine's speed drifts over seconds to tens of seconds). Each time
  // is the lowest of the passes' medians: other work on the machine only ever slows a layer,
  // so the quietest pass is the layer's own cost; how much slower the passes ran together
  // is the profile's load factor (core/profile.h). A size whose one repeat outlasts its share
  // of the budget gets one repeat a turn, one sample per pass.
  int passes = 3;
};

// Ok, or what is wrong with `options` for `model` in a job of `world_size` ranks, naming the
// flag and the fix: a tp that does not shard the model or does not fit the job, a cp that does
// not fit the job or cannot cut the sequence into 2·cp chunks, a sequence longer than
// max_seq_len, bad repeat settings.
Status CheckMeasuredOptions(const ModelSpec& model, const MeasuredProfileOptions& options,
                            int world_size);

// The tp degrees a profile of `world_size` ranks can measure with `options` (its tps ignored):
// each divisor tp of world_size for which `options` with tps = {tp} passes
// CheckMeasuredOptions, in increasing order; empty when none does.
std::vector<int> MeasurableTpDegrees(const ModelSpec& model, MeasuredProfileOptions options,
                                     int world_size);

// "AMD EPYC 7B13" from the text of /proc/cpuinfo (its first "model name"), or "" when absent.
std::string CpuModelName(std::string_view cpuinfo);
// This machine's CPU model name, "unknown CPU" when /proc/cpuinfo does not say.
std::string ThisCpuModelName();
// "NVIDIA H100 80GB HBM3" from the text of an NVIDIA driver's
// /proc/driver/nvidia/gpus/BUS/information (its "Model:" line), or "" when absent.
std::string GpuModelName(std::string_view information);
// This machine's GPUs as the NVIDIA driver lists them (/proc/driver/nvidia/gpus), their model
// names in bus order ("unknown GPU" for one whose file does not say); empty without a driver.
std::vector<std::string> ThisGpuModels();

}  // namespace trident
