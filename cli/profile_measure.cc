// trident profile MODEL --device, as trident-profile runs it: the layers measured on this
// machine with the runtime's backends (profiler/measured_profile.h), a progress display, the
// summary table and the file.
#include "cli/profile_measure.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/format.h"
#include "core/file_util.h"
#include "core/launcher_env.h"
#include "core/logging.h"
#include "profiler/measured_profile.h"
#include "runtime/comm/comm_factory.h"
#include "runtime/compute/compute_factory.h"

namespace trident {
namespace {

// Milliseconds with three decimals below 10 ms (the small layers of small models).
std::string Ms(double ms) { return ms < 10 ? FormatFixed(ms, 3) + " ms" : FormatMs(ms); }

// "2", "2 sp" for an entry with sequence parallelism, "2 sp cp 4" for one of cp degree 4.
std::string TpLabel(int tp, bool sequence_parallel, int cp) {
  return std::to_string(tp) + (sequence_parallel ? " sp" : "") +
         (cp > 1 ? " cp " + std::to_string(cp) : "");
}

// One row per layer group and (micro-batch, tp, sequence parallelism, cp).
void PrintMeasuredSummary(const Profile& profile) {
  std::cout << profile.ToString() << "\n\n";
  TextTable table({"layers", "kind", "mb", "tp", "fwd", "bwd input", "bwd weight", "+selective",
                   "+full", "stashed", "spread"});
  for (const LayerProfile& layer : profile.layers) {
    for (const ProfileEntry& e : layer.entries) {
      table.AddRow({LayerRange(layer), NameOf(LayerKindNames(), layer.kind),
                    std::to_string(e.micro_batch), TpLabel(e.tp, e.sequence_parallel, e.cp),
                    Ms(e.fwd_ms), Ms(e.bwd_input_ms), Ms(e.bwd_weight_ms),
                    Ms(e.recompute_selective_ms), Ms(e.recompute_full_ms),
                    FormatBytes(static_cast<double>(e.stashed_none_bytes)),
                    FormatFixed(e.spread_pct, 1) + "%"});
    }
  }
  const double load = profile.method.load_factor;
  std::cout << table.ToString()
            << "\ntimes: the median of each figure's quietest pass; load factor "
            << FormatFixed(load, 3) << ": all repeats ran " << FormatFixed(100 * (load - 1), 1)
            << "% slower at the median, and plans multiply the times by it\n";
}

// Progress on stderr: a bar redrawn in place on a terminal, one line per finished
// measurement otherwise (logs stay readable).
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

  void operator()(const MeasureProgress& p) {
    std::string what = NameOf(LayerKindNames(), p.kind) + " mb " + std::to_string(p.micro_batch) +
                       " tp " + TpLabel(p.tp, p.sequence_parallel, p.cp) + " pass " +
                       std::to_string(p.pass) + "/" + std::to_string(p.passes);
    if (tty_) {
      constexpr int kWidth = 30;
      int filled = p.total == 0 ? kWidth : kWidth * p.done / p.total;
      std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
                << p.done << "/" << p.total << " " << Elapsed() << "  " << what << "\033[K"
                << (p.done == p.total && p.result != nullptr ? "\n" : "") << std::flush;
      return;
    }
    if (p.result == nullptr) return;
    const ProfileEntry& e = p.result->entry;
    std::cerr << "profile " << p.done << "/" << p.total << " " << Elapsed() << " " << what
              << ": fwd " << Ms(e.fwd_ms) << ", bwd input " << Ms(e.bwd_input_ms) << ", bwd weight "
              << Ms(e.bwd_weight_ms) << " (" << p.result->repeats << " repeats, spread "
              << FormatFixed(e.spread_pct, 1) << "%, load " << FormatFixed(p.result->load, 3)
              << ")\n";
  }

 private:
  std::string Elapsed() const {
    auto s =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_)
            .count();
    return std::to_string(s / 60) + ":" + (s % 60 < 10 ? "0" : "") + std::to_string(s % 60);
  }

  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

// The dtype measured: --dtype, else the model's.
DType MeasuredDtype(const ProfileOptions& o, const ModelSpec& model) {
  return ValueOf(DTypeNames(), o.dtype).value_or(model.dtype);
}

StatusOr<MeasuredProfileOptions> MeasuredOptions(const ProfileOptions& o, const ModelSpec& model) {
  const DType dtype = MeasuredDtype(o, model);
  if (dtype == DType::kFp16) {
    return InvalidArgument(
        "--dtype fp16: the runtime does not train in fp16 (it has no loss "
        "scaling); use --dtype bf16 or fp32");
  }
  const int launched = LaunchedWorldSize().value_or(0);
  MeasuredProfileOptions options;
  options.dtype = dtype;
  options.device = o.device;
  options.micro_batches = o.micro_batches;
  if (!o.tps.empty()) {
    options.tps = o.tps;
  } else if (launched > 1 && model.TensorParallelProblem(launched).empty()) {
    options.tps = {1, launched};
  }
  if (!o.cps.empty()) options.cps = o.cps;
  options.seq_len = o.seq_len;
  options.threads = o.threads;
  options.clock = o.clock == "cpu" ? TimingClock::kThreadCpu : TimingClock::kWall;
  options.repeats.budget_ms = o.time_budget_s * 1000;
  options.repeats.max_repeats = o.max_repeats;
  options.repeats.min_repeats = std::min(options.repeats.min_repeats, o.max_repeats);
  options.passes = o.passes;
  TRIDENT_RETURN_IF_ERROR(CheckMeasuredOptions(model, options, std::max(launched, 1)));
  return options;
}

// A note when other work keeps this machine's CPUs busy: timings are wall-clock times.
void PrintLoadNote() {
  StatusOr<std::string> loadavg = ReadFile("/proc/loadavg");
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!loadavg.ok() || cpus < 1) return;
  const double load = std::atof(loadavg->c_str());
  if (load < std::max(1.0, 0.25 * static_cast<double>(cpus))) return;
  std::cerr << "note: this machine is busy (load average " << FormatFixed(load, 1) << " on " << cpus
            << " CPUs); wall-clock timings will be noisier than on an idle machine\n";
}

void PrintNotes(const ModelSpec& model) {
  PrintLoadNote();
  if (model.dropout > 0) {
    std::cerr << "note: " << model.name << " has dropout " << model.dropout
              << ", which the runtime layers do not implement; measuring it without dropout\n";
  }
}

// The job's communicator when this process is one rank of a job, or when tp > 1 asks for one:
// NCCL (tensors) over MPI (host figures) on GPUs, MPI alone on CPUs.
StatusOr<std::unique_ptr<Comm>> WorldFor(const MeasuredProfileOptions& options,
                                         const Compute& compute) {
  const int largest_tp = *std::max_element(options.tps.begin(), options.tps.end());
  const int largest_cp = *std::max_element(options.cps.begin(), options.cps.end());
  if (!LaunchedWorldSize() && largest_tp * largest_cp == 1) return std::unique_ptr<Comm>();
  if (options.device == "cuda") {
    return MakeWorldComm("nccl", CommOptions{.device_stream = compute.device_stream()});
  }
  return MakeWorldComm("mpi");
}

int WriteMeasured(const Profile& profile, const std::string& output) {
  if (Status s = WriteFileAtomic(output, ProfileToYaml(profile)); !s.ok()) return PrintError(s);
  PrintMeasuredSummary(profile);
  std::cout << "\nwrote " << output << "\n";
  return 0;
}

}  // namespace

int RunMeasuredProfile(const ProfileOptions& o, const ModelSpec& model) {
  const bool lead = LaunchedWorldSize() == 0 || LogContext::FromEnvironment().rank.value_or(0) == 0;
  StatusOr<MeasuredProfileOptions> options = MeasuredOptions(o, model);
  if (!options.ok()) return lead ? PrintError(options.status()) : 1;
  StatusOr<std::unique_ptr<Compute>> compute =
      MakeCompute({.device = options->device, .threads = options->threads});
  if (!compute.ok()) return PrintError(compute.status());
  StatusOr<std::unique_ptr<Comm>> world = WorldFor(*options, **compute);
  if (!world.ok()) return PrintError(world.status());
  Comm* comm = world->get();
  const bool rank0 = comm == nullptr || comm->Rank() == 0;
  if (rank0) PrintNotes(model);
  ProgressPrinter printer;
  MeasureProgressFn progress;
  if (rank0) progress = [&printer](const MeasureProgress& p) { printer(p); };
  StatusOr<Profile> profile = MeasureProfile(model, *options, **compute, comm, progress);
  if (!profile.ok()) {
    if (comm == nullptr || comm->Size() == 1) return PrintError(profile.status());
    comm->FailJob(profile.status());  // peers may wait in a collective
  }
  if (!rank0) return 0;
  return WriteMeasured(*profile, o.output.empty() ? "profile.yaml" : o.output);
}

}  // namespace trident
