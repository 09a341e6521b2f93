#include "profiler/measured_options.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file_util.h"

namespace trident {
namespace {

Status CheckCp(int cp, int64_t seq, int world_size) {
  const std::string c = std::to_string(cp);
  if (cp < 1 || world_size % cp != 0) {
    return InvalidArgument("--cp " + c + ": a cp shard is timed as one rank of a group of " + c +
                           ", and the job's " + std::to_string(world_size) +
                           " rank(s) do not split into such groups; run under mpirun with a "
                           "multiple of " +
                           c + " ranks, e.g. mpirun -np " + c + " trident profile MODEL --cp 1," +
                           c);
  }
  if (cp > 1 && seq % (2 * cp) != 0) {
    return InvalidArgument("--cp " + c + ": the sequence of " + std::to_string(seq) +
                           " tokens does not cut into 2·cp = " + std::to_string(2 * cp) +
                           " equal chunks; pick a cp with 2·cp dividing --seq");
  }
  return Status::Ok();
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

}  // namespace

Status CheckMeasuredOptions(const ModelSpec& model, const MeasuredProfileOptions& options,
                            int world_size) {
  TRIDENT_RETURN_IF_ERROR(CheckNotGeneric(model, "this machine cannot run it to measure it",
                                          "plan it with the profile it was imported with"));
  if (options.micro_batches.empty() || options.tps.empty()) {
    return InvalidArgument("--micro-batch and --tp need at least one value each");
  }
  for (int mb : options.micro_batches) {
    if (mb < 1) return InvalidArgument("--micro-batch " + std::to_string(mb) + ": must be >= 1");
  }
  for (int tp : options.tps) TRIDENT_RETURN_IF_ERROR(CheckTp(model, tp, world_size));
  const int64_t seq = options.seq_len > 0 ? options.seq_len : model.max_seq_len;
  for (int cp : options.cps) {
    TRIDENT_RETURN_IF_ERROR(CheckCp(cp, seq, world_size));
    const bool fits = std::any_of(options.tps.begin(), options.tps.end(),
                                  [&](int tp) { return world_size % (tp * cp) == 0; });
    if (!fits) {
      return InvalidArgument(
          "--cp " + std::to_string(cp) + ": no --tp degree T has T·cp dividing " + "the job's " +
          std::to_string(world_size) + " ranks, so nothing would be measured at it; add --tp 1");
    }
  }
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

std::vector<int> MeasurableTpDegrees(const ModelSpec& model, MeasuredProfileOptions options,
                                     int world_size) {
  std::vector<int> tps;
  for (int tp = 1; tp <= world_size; ++tp) {
    if (world_size % tp != 0) continue;
    options.tps = {tp};
    if (CheckMeasuredOptions(model, options, world_size).ok()) tps.push_back(tp);
  }
  return tps;
}

namespace {

// The value of the first "key: value" line of `text` whose key starts with `key`, trimmed;
// "" when there is none.
std::string FirstValueOf(std::string_view text, std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? end : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    size_t colon = line.find(':');
    if (!line.starts_with(key) || colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    if (!value.empty()) return std::string(value);
  }
  return "";
}

}  // namespace

std::string CpuModelName(std::string_view cpuinfo) { return FirstValueOf(cpuinfo, "model name"); }

std::string GpuModelName(std::string_view information) {
  return FirstValueOf(information, "Model");
}

std::vector<std::string> ThisGpuModels() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    files.push_back((entry.path() / "information").string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> models;
  for (const std::string& file : files) {
    StatusOr<std::string> text = ReadFile(file);
    const std::string name = text.ok() ? GpuModelName(*text) : "";
    models.push_back(name.empty() ? "unknown GPU" : name);
  }
  return models;
}

std::string ThisCpuModelName() {
  StatusOr<std::string> text = ReadFile("/proc/cpuinfo");
  std::string name = text.ok() ? CpuModelName(*text) : "";
  return name.empty() ? "unknown CPU" : name;
}

}  // namespace trident
