#include "profiler/measured_profile.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "core/rank_map.h"
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

// This rank's tp and cp groups when the job's ranks form replicas of a cp × tp mesh (the rank
// map's order: tp consecutive ranks, cp groups tp apart); null for a degree of 1.
struct Groups {
  std::unique_ptr<Comm> tp, cp;
};
StatusOr<Groups> MeshGroups(Comm* world, int tp, int cp) {
  Groups groups;
  if (tp * cp == 1) return groups;
  TRIDENT_ASSIGN_OR_RETURN(RankMap map, RankMap::Create(tp, cp, {world->Size() / (tp * cp)}));
  if (tp > 1) {
    TRIDENT_ASSIGN_OR_RETURN(groups.tp, world->Split(map.TpGroup(world->Rank())));
  }
  if (cp > 1) {
    TRIDENT_ASSIGN_OR_RETURN(groups.cp, world->Split(map.CpGroup(world->Rank())));
  }
  return groups;
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
  p.dtype = o.dtype;
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
      return std::tuple(a.micro_batch, a.tp, a.sequence_parallel, a.cp) <
             std::tuple(b.micro_batch, b.tp, b.sequence_parallel, b.cp);
    });
    p->layers.push_back({first, group.repeat, group.kind, mine});
    first += group.repeat;
  }
}

// One layer kind at one tp and cp degree, and its bench (which holds the groups it measures with).
struct Measurement {
  LayerKind kind;
  int tp;
  bool sequence_parallel;
  int cp;
  std::unique_ptr<LayerBench> bench;
};

// The turns (see the header): every pass measures every layer and size once, sizes ascending.
Status TakeTurns(std::vector<Measurement>& measurements, const MeasuredProfileOptions& options,
                 const MeasureProgressFn& progress) {
  const RepeatPolicy share = options.repeats.Share(options.passes);
  std::vector<int> sizes = options.micro_batches;
  std::sort(sizes.begin(), sizes.end());
  MeasureProgress report;
  report.passes = options.passes;
  report.total = options.passes * static_cast<int>(measurements.size() * sizes.size());
  for (report.pass = 1; report.pass <= options.passes; ++report.pass) {
    for (Measurement& m : measurements) {
      for (int mb : sizes) {
        report = {report.done, report.total, report.pass,         report.passes, m.kind,
                  mb,          m.tp,         m.sequence_parallel, m.cp};
        if (progress) progress(report);
        TRIDENT_RETURN_IF_ERROR(m.bench->Measure(mb, share));
        LayerMeasurement result = m.bench->Result(mb);
        ++report.done;
        report.result = &result;
        if (progress) progress(report);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Profile> MeasureProfile(const ModelSpec& model, const MeasuredProfileOptions& options,
                                 Compute& compute, Comm* world, const MeasureProgressFn& progress) {
  const int world_size = world == nullptr ? 1 : world->Size();
  TRIDENT_RETURN_IF_ERROR(CheckMeasuredOptions(model, options, world_size));
  ModelSpec runnable = model;
  runnable.dropout = 0;
  Profile profile = ProfileHeader(model, options, compute, world_size);
  std::vector<Groups> groups;
  std::vector<Measurement> measurements;
  for (int cp : options.cps) {
    for (int tp : options.tps) {
      if (world_size % (tp * cp) != 0) continue;  // a combination larger than the job
      TRIDENT_ASSIGN_OR_RETURN(groups.emplace_back(), MeshGroups(world, tp, cp));
      for (bool sp : {false, true}) {
        if (sp && (tp == 1 || profile.seq_len / cp % tp != 0)) continue;
        for (LayerKind kind : DistinctKinds(model)) {
          LayerBenchSetup setup{kind,
                                profile.seq_len,
                                &compute,
                                groups.back().tp.get(),
                                world,
                                options.clock,
                                sp,
                                groups.back().cp.get(),
                                ElementTypeOf(options.dtype)};
          TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<LayerBench> bench,
                                   LayerBench::Create(runnable, setup));
          measurements.push_back({kind, tp, sp, cp, std::move(bench)});
        }
      }
    }
  }
  TRIDENT_RETURN_IF_ERROR(TakeTurns(measurements, options, progress));
  int fewest_repeats = options.repeats.max_repeats;
  std::vector<double> loads;
  std::map<LayerKind, std::vector<ProfileEntry>> entries;
  for (const Measurement& m : measurements) {
    for (int mb : options.micro_batches) {
      LayerMeasurement result = m.bench->Result(mb);
      entries[m.kind].push_back(result.entry);
      fewest_repeats = std::min(fewest_repeats, result.repeats);
      loads.push_back(result.load);
    }
  }
  profile.method.repeats = fewest_repeats;
  profile.method.load_factor = RoundedTo(Median(loads), 3);
  AddLayers(model, std::move(entries), &profile);
  return profile;
}

}  // namespace trident
