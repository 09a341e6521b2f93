#include "profiler/measured_profile.h"

#include <algorithm>
#include <map>
#include <memory>

#include "core/file_util.h"
#include "core/version.h"

namespace trident {
namespace {

// The model's layer kinds, each once, in the order they first appear.
std::vector<LayerKind> DistinctKinds(const ModelSpec& model) {
  std::vector<LayerKind> kinds;
  for (const LayerGroup& group : model.layers) {
    if (std::find(kinds.begin(), kinds.end(), group.kind) == kinds.end()) {
      kinds.push_back(group.kind);
    }
  }
  return kinds;
}

Status CheckTp(const ModelSpec& model, int tp, int world_size) {
  if (std::string problem = model.TensorParallelProblem(tp); !problem.empty()) {
    return InvalidArgument("--tp " + std::to_string(tp) + ": " + problem + " of " + model.name +
                           "; pick a tp that divides heads (" + std::to_string(model.heads) +
                           "), kv_heads (" + std::to_string(model.kv_heads) + ") and ffn_hidden (" +
                           std::to_string(model.ffn_hidden) + ")");
  }
  if (tp > world_size) {
    const std::string t = std::to_string(tp);
    return InvalidArgument("--tp " + t + ": a tp shard is timed as one rank of a group of " + t +
                           " runs it, with its collectives, and this job has " +
                           std::to_string(world_size) + " rank" + (world_size == 1 ? "" : "s") +
                           "; run under mpirun, e.g. mpirun -np " + t +
                           " trident profile MODEL --device cpu --tp " + t);
  }
  if (world_size % tp != 0) {
    return InvalidArgument("--tp " + std::to_string(tp) + ": the job's " +
                           std::to_string(world_size) + " ranks do not split into groups of " +
                           std::to_string(tp) + "; start a multiple of " + std::to_string(tp) +
                           " ranks");
  }
  return Status::Ok();
}

// This rank's tp group of `tp` consecutive ranks of `world`; null for tp 1.
StatusOr<std::unique_ptr<Comm>> TpGroup(Comm* world, int tp) {
  if (tp == 1) return std::unique_ptr<Comm>();
  std::vector<int> ranks;
  const int first = world->Rank() / tp * tp;
  for (int r = first; r < first + tp; ++r) ranks.push_back(r);
  return world->Split(ranks);
}

std::string DeviceName(const MeasuredProfileOptions& o, const Compute& compute, int world_size) {
  std::string text = o.device == "cuda" ? compute.Describe() + " (1 GPU"
                                        : ThisCpuModelName() + " (" + std::to_string(o.threads) +
                                              (o.threads == 1 ? " thread" : " threads");
  if (world_size > 1) text += " per rank, " + std::to_string(world_size) + " ranks";
  if (o.clock == TimingClock::kThreadCpu) text += ", thread CPU time";
  return text + ")";
}

Profile ProfileHeader(const ModelSpec& model, const MeasuredProfileOptions& o,
                      const Compute& compute, int world_size) {
  Profile p;
  p.model = model.name;
  p.num_layers = model.NumLayers();
  p.seq_len = o.seq_len > 0 ? o.seq_len : model.max_seq_len;
  p.dtype = DType::kFp32;
  p.device_kind = o.device == "cuda" ? DeviceKind::kGpu : DeviceKind::kCpu;
  p.device = DeviceName(o, compute, world_size);
  p.threads = o.threads;
  p.build = TridentBuild();
  p.date = UtcTimestamp();
  p.method = {ProfileSource::kMeasured, o.repeats.warmup, 0};
  return p;
}

// The entries of every kind, in (micro-batch, tp) order, laid over the model's layer groups.
void AddLayers(const ModelSpec& model, std::map<LayerKind, std::vector<ProfileEntry>> entries,
               Profile* p) {
  int first = 0;
  for (const LayerGroup& group : model.layers) {
    std::vector<ProfileEntry>& mine = entries[group.kind];
    std::sort(mine.begin(), mine.end(), [](const ProfileEntry& a, const ProfileEntry& b) {
      return std::pair(a.micro_batch, a.tp) < std::pair(b.micro_batch, b.tp);
    });
    p->layers.push_back({first, group.repeat, group.kind, mine});
    first += group.repeat;
  }
}

}  // namespace

Status CheckMeasuredOptions(const ModelSpec& model, const MeasuredProfileOptions& options,
                            int world_size) {
  if (options.micro_batches.empty() || options.tps.empty()) {
    return InvalidArgument("--micro-batch and --tp need at least one value each");
  }
  for (int mb : options.micro_batches) {
    if (mb < 1) return InvalidArgument("--micro-batch " + std::to_string(mb) + ": must be >= 1");
  }
  for (int tp : options.tps) TRIDENT_RETURN_IF_ERROR(CheckTp(model, tp, world_size));
  if (options.seq_len < 0 || options.seq_len > model.max_seq_len) {
    return InvalidArgument("--seq " + std::to_string(options.seq_len) + " exceeds " + model.name +
                           "'s max_seq_len " + std::to_string(model.max_seq_len) +
                           "; pick --seq between 1 and " + std::to_string(model.max_seq_len));
  }
  if (options.passes < 1) {
    return InvalidArgument("--passes " + std::to_string(options.passes) +
                           ": give at least 1 pass over the measurements");
  }
  if (options.threads < 1) {
    return InvalidArgument("--threads " + std::to_string(options.threads) +
                           ": give at least 1 compute thread per rank");
  }
  if (options.device != "cpu" && options.device != "cuda") {
    return InvalidArgument("--device " + options.device + ": unknown device; use cpu or cuda");
  }
  if (options.clock == TimingClock::kThreadCpu && options.device == "cuda") {
    return InvalidArgument(
        "--clock cpu reads the host thread's CPU time, which misses the GPU's work; use --clock "
        "wall with --device cuda");
  }
  if (options.clock == TimingClock::kThreadCpu && options.threads != 1) {
    return InvalidArgument("--clock cpu reads the calling thread's CPU time, which misses the " +
                           std::to_string(options.threads - 1) +
                           " other compute threads; use --threads 1 or --clock wall");
  }
  return options.repeats.Validate();
}

namespace {

// One layer kind at one tp degree, and its bench (which holds the tp group it measures with).
struct Measurement {
  LayerKind kind;
  int tp;
  std::unique_ptr<LayerBench> bench;
  std::vector<int> measured;  // the micro-batch sizes with samples
  bool slow = false;          // one repeat at some size outlasted a turn

  bool Measured(int mb) const {
    return std::find(measured.begin(), measured.end(), mb) != measured.end();
  }
};

// The turns (see the header). A size whose one repeat outlasts a turn has a sample of seconds
// and takes no more turns. A measurement that has such a size takes its sizes not yet measured
// (larger, so slower still) one per pass, and all that are left in the last: spread so, the
// fast measurements' later turns fall between them, over the whole profile, not all at its
// end (a gpt2-small block or LM head: seconds a repeat).
class Turns {
 public:
  Turns(std::vector<Measurement>& measurements, const MeasuredProfileOptions& options)
      : measurements_(measurements),
        options_(options),
        share_(options.repeats.Share(options.passes)),
        sizes_(options.micro_batches) {
    std::sort(sizes_.begin(), sizes_.end());
  }

  Status Run(const MeasureProgressFn& progress) {
    MeasureProgress report;
    report.passes = options_.passes;
    report.total = Planned({});
    for (report.pass = 1; report.pass <= options_.passes; ++report.pass) {
      for (size_t i = 0; i < measurements_.size(); ++i) {
        Measurement& m = measurements_[i];
        bool took_new = false;
        for (int mb : sizes_) {
          const Size size = SizeOf(m, mb);
          if (!Takes(size, m.slow, took_new, report.pass)) continue;
          took_new = took_new || size == Size::kNew;
          report = {report.done, report.total, report.pass, report.passes, m.kind, mb, m.tp};
          if (progress) progress(report);
          TRIDENT_RETURN_IF_ERROR(m.bench->Measure(mb, share_));
          if (size == Size::kNew) m.measured.push_back(mb);
          LayerMeasurement result = m.bench->Result(mb);
          m.slow = m.slow || result.repeat_ms > share_.budget_ms;
          ++report.done;
          report.total = report.done + Planned({report.pass, i, mb, took_new});
          report.result = &result;
          if (progress) progress(report);
        }
      }
    }
    return Status::Ok();
  }

 private:
  enum class Size { kNew, kFast, kSlow };  // not measured yet; one repeat within a turn or not

  // Where the turns stand: the last turn taken (none: pass 1, mb 0).
  struct Position {
    int pass = 1;
    size_t index = 0;
    int mb = 0;
    bool took_new = false;  // whether measurement `index` took a new size in `pass`
  };

  Size SizeOf(const Measurement& m, int mb) const {
    if (!m.Measured(mb)) return Size::kNew;
    return m.bench->Result(mb).repeat_ms > share_.budget_ms ? Size::kSlow : Size::kFast;
  }

  bool Takes(Size size, bool slow, bool took_new, int pass) const {
    if (size != Size::kNew) return size == Size::kFast;
    return !slow || !took_new || pass == options_.passes;
  }

  // The turns still to come after `at`, counting a size not measured yet as slow in a slow
  // measurement and fast in the others (for the progress display).
  int Planned(const Position& at) const {
    int turns = 0;
    std::vector<std::vector<int>> taken(measurements_.size());  // new sizes, as planned
    for (int pass = at.pass; pass <= options_.passes; ++pass) {
      for (size_t i = 0; i < measurements_.size(); ++i) {
        const Measurement& m = measurements_[i];
        const bool now = pass == at.pass && i == at.index;
        if (pass == at.pass && i < at.index) continue;
        bool took_new = now && at.took_new;
        for (int mb : sizes_) {
          if (now && mb <= at.mb) continue;
          Size size = SizeOf(m, mb);
          if (std::find(taken[i].begin(), taken[i].end(), mb) != taken[i].end()) {
            size = m.slow ? Size::kSlow : Size::kFast;
          }
          if (!Takes(size, m.slow, took_new, pass)) continue;
          ++turns;
          if (size != Size::kNew) continue;
          took_new = true;
          taken[i].push_back(mb);
        }
      }
    }
    return turns;
  }

  std::vector<Measurement>& measurements_;
  const MeasuredProfileOptions& options_;
  const RepeatPolicy share_;
  std::vector<int> sizes_;  // ascending
};

}  // namespace

StatusOr<Profile> MeasureProfile(const ModelSpec& model, const MeasuredProfileOptions& options,
                                 Compute& compute, Comm* world, const MeasureProgressFn& progress) {
  const int world_size = world == nullptr ? 1 : world->Size();
  TRIDENT_RETURN_IF_ERROR(CheckMeasuredOptions(model, options, world_size));
  ModelSpec runnable = model;
  runnable.dropout = 0;
  Profile profile = ProfileHeader(model, options, compute, world_size);
  std::vector<std::unique_ptr<Comm>> groups;
  std::vector<Measurement> measurements;
  for (int tp : options.tps) {
    TRIDENT_ASSIGN_OR_RETURN(groups.emplace_back(), TpGroup(world, tp));
    for (LayerKind kind : DistinctKinds(model)) {
      LayerBenchSetup setup{kind,  profile.seq_len, &compute, groups.back().get(),
                            world, options.clock};
      TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<LayerBench> bench,
                               LayerBench::Create(runnable, setup));
      measurements.push_back({kind, tp, std::move(bench), {}, false});
    }
  }
  TRIDENT_RETURN_IF_ERROR(Turns(measurements, options).Run(progress));
  int fewest_repeats = options.repeats.max_repeats;
  std::map<LayerKind, std::vector<ProfileEntry>> entries;
  for (const Measurement& m : measurements) {
    for (int mb : options.micro_batches) {
      LayerMeasurement result = m.bench->Result(mb);
      entries[m.kind].push_back(result.entry);
      fewest_repeats = std::min(fewest_repeats, result.repeats);
    }
  }
  profile.method.repeats = fewest_repeats;
  AddLayers(model, std::move(entries), &profile);
  return profile;
}

std::string CpuModelName(std::string_view cpuinfo) {
  constexpr std::string_view kKey = "model name";
  for (size_t at = 0; at < cpuinfo.size();) {
    size_t end = cpuinfo.find('\n', at);
    std::string_view line = cpuinfo.substr(at, end == std::string_view::npos ? end : end - at);
    at = end == std::string_view::npos ? cpuinfo.size() : end + 1;
    size_t colon = line.find(':');
    if (!line.starts_with(kKey) || colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    if (!value.empty()) return std::string(value);
  }
  return "";
}

std::string ThisCpuModelName() {
  StatusOr<std::string> text = ReadFile("/proc/cpuinfo");
  std::string name = text.ok() ? CpuModelName(*text) : "";
  return name.empty() ? "unknown CPU" : name;
}

}  // namespace trident
