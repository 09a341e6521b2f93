#include "core/published_runs.h"

#include <cmath>
#include <set>

#include "core/document.h"
#include "core/limits.h"

namespace trident {
namespace {

Status ReadRun(YamlMap& map, const PublishedRunCheck& check, PublishedRuns* out) {
  PublishedRun run;
  TRIDENT_RETURN_IF_ERROR(map.Get("name", &run.name));
  TRIDENT_RETURN_IF_ERROR(map.Get("step_s", &run.step_s));
  TRIDENT_RETURN_IF_ERROR(map.Get("megatron", &run.megatron));
  TRIDENT_RETURN_IF_ERROR(map.Finish());
  if (check) {
    if (Status s = check(*out, run); !s.ok()) {
      return map.Error("megatron", s.message(), "correct the run's Megatron-LM arguments");
    }
  }
  out->runs.push_back(std::move(run));
  return Status::Ok();
}

auto Reader(const PublishedRunCheck& check) {
  return [&check](YamlMap& map, PublishedRuns* out) -> Status {
    TRIDENT_RETURN_IF_ERROR(map.Get("name", &out->name));
    TRIDENT_RETURN_IF_ERROR(map.Get("source", &out->source));
    TRIDENT_RETURN_IF_ERROR(map.Get("cluster", &out->cluster));
    TRIDENT_RETURN_IF_ERROR(map.GetOptional("vocab_size", &out->vocab_size));
    return map.ForEachMap("runs", [&](YamlMap& run, int) { return ReadRun(run, check, out); });
  };
}

FieldCheck CheckRun(const PublishedRun& run, const std::string& path,
                    std::set<std::string>* names) {
  if (run.name.empty()) return FieldError{JoinKeyPath(path, "name"), "is empty", "name the run"};
  if (!names->insert(run.name).second) {
    return FieldError{JoinKeyPath(path, "name"), "'" + run.name + "' names an earlier run too",
                      "give each run its own name"};
  }
  if (!(run.step_s > 0)) {
    return FieldError{JoinKeyPath(path, "step_s"),
                      "must be positive, got " + FormatDouble(run.step_s),
                      "give the published seconds of one training step"};
  }
  if (run.megatron.empty()) {
    return FieldError{JoinKeyPath(path, "megatron"), "is empty",
                      "give the run's Megatron-LM arguments"};
  }
  return std::nullopt;
}

}  // namespace

FieldCheck PublishedRuns::Check() const {
  if (name.empty()) return FieldError{"name", "is empty", "name the set of runs"};
  if (cluster.empty()) return FieldError{"cluster", "is empty", "name a cluster file"};
  if (FieldCheck range = CheckRange("vocab_size", vocab_size, 0, limits::kMaxVocab)) return range;
  if (runs.empty()) return FieldError{"runs", "is empty", "add a run"};
  std::set<std::string> names;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (FieldCheck error = CheckRun(runs[i], IndexKeyPath("runs", i), &names)) return error;
  }
  return std::nullopt;
}

std::string PublishedRuns::ToString() const {
  return name + ": " + std::to_string(runs.size()) + " published runs on " + cluster;
}

StatusOr<PublishedRuns> ParsePublishedRuns(std::string_view text, const std::string& file,
                                           const PublishedRunCheck& check) {
  return ParseDocument<PublishedRuns>(text, file, "published_runs", Reader(check));
}

StatusOr<PublishedRuns> LoadPublishedRuns(const std::string& path, const PublishedRunCheck& check) {
  return LoadDocument<PublishedRuns>(path, "published_runs", Reader(check));
}

std::string PublishedRunsToYaml(const PublishedRuns& runs) {
  YamlWriter out;
  out.BeginMap();
  WriteDocumentHeader(out, "published_runs", PublishedRuns::kFormatVersion);
  out.Field("name", runs.name).Field("source", runs.source).Field("cluster", runs.cluster);
  if (runs.vocab_size != 0) out.Field("vocab_size", runs.vocab_size);
  out.Key("runs").BeginList();
  for (const PublishedRun& run : runs.runs) {
    out.BeginMap()
        .Field("name", run.name)
        .Field("step_s", run.step_s)
        .Field("megatron", run.megatron)
        .EndMap();
  }
  out.EndList().EndMap();
  return out.Text();
}

int StepErrors::CountBeyond(double bound_pct) const {
  int count = 0;
  for (const std::optional<double>& error : error_pct)
    count += error && std::abs(*error) > bound_pct;
  return count;
}

StepErrors CompareStepTimes(const PublishedRuns& runs,
                            const std::vector<std::optional<double>>& predicted_s) {
  StepErrors out;
  int predicted = 0;
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    if (!predicted_s[i]) {
      out.error_pct.push_back(std::nullopt);
      continue;
    }
    const double published_s = runs.runs[i].step_s;
    const double error = 100 * (*predicted_s[i] - published_s) / published_s;
    out.error_pct.push_back(error);
    out.mean_abs_pct += std::abs(error);
    if (out.worst < 0 || std::abs(error) > out.max_abs_pct) {
      out.max_abs_pct = std::abs(error);
      out.worst = static_cast<int>(i);
    }
    ++predicted;
  }
  if (predicted > 0) out.mean_abs_pct /= predicted;
  return out;
}

}  // namespace trident
