#include "runtime/train/run_report.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/text_format.h"

namespace trident {

double RankStepStats::IdleMs() const { return std::max(0.0, schedule_ms - compute_ms); }

double RankStepStats::BubbleFraction() const {
  return schedule_ms > 0 ? IdleMs() / schedule_ms : 0.0;
}

std::vector<float> EncodeStats(const RankStepStats& s) {
  const int64_t peak = s.peak_memory_bytes;
  return {static_cast<float>(s.step_ms),    static_cast<float>(s.schedule_ms),
          static_cast<float>(s.compute_ms), static_cast<float>(s.pipeline_wait_ms),
          static_cast<float>(s.sync_ms),    static_cast<float>(s.optimizer_ms),
          static_cast<float>(peak >> 32),   static_cast<float>((peak >> 16) & 0xFFFF),
          static_cast<float>(peak & 0xFFFF)};
}

RankStepStats DecodeStats(const float* f) {
  RankStepStats s{f[0], f[1], f[2], f[3], f[4], f[5]};
  s.peak_memory_bytes = (static_cast<int64_t>(f[6]) << 32) | (static_cast<int64_t>(f[7]) << 16) |
                        static_cast<int64_t>(f[8]);
  return s;
}

std::string MetricsLine(const StepSummary& step, int rank, const MeshCoords& c,
                        const RankStepStats& s) {
  nlohmann::ordered_json j;
  j["step"] = step.step;
  j["rank"] = rank;
  j["dp"] = c.dp;
  j["pp"] = c.pp;
  j["tp"] = c.tp;
  j["loss"] = step.loss;
  j["lr"] = step.lr;
  j["grad_norm"] = step.grad_norm;
  j["tokens_per_s"] = s.step_ms > 0 ? static_cast<double>(step.tokens) / (s.step_ms / 1e3) : 0.0;
  j["step_time_ms"] = s.step_ms;
  j["schedule_ms"] = s.schedule_ms;
  j["compute_ms"] = s.compute_ms;
  j["pipeline_wait_ms"] = s.pipeline_wait_ms;
  j["idle_ms"] = s.IdleMs();
  j["bubble_fraction"] = s.BubbleFraction();
  j["sync_ms"] = s.sync_ms;
  j["optimizer_ms"] = s.optimizer_ms;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  return j.dump();
}

std::string StepLine(const StepSummary& step, const std::vector<RankStepStats>& ranks) {
  double step_ms = 0, bubble = 0;
  int64_t peak = 0;
  for (const RankStepStats& r : ranks) {
    step_ms = std::max(step_ms, r.step_ms);
    bubble += r.BubbleFraction() / static_cast<double>(ranks.size());
    peak = std::max(peak, r.peak_memory_bytes);
  }
  char lr[32];
  std::snprintf(lr, sizeof(lr), "%.2e", step.lr);
  const double tokens_per_s = step_ms > 0 ? static_cast<double>(step.tokens) / (step_ms / 1e3) : 0;
  return "step " + std::to_string(step.step) + "/" + std::to_string(step.steps) + " | loss " +
         FormatFixed(step.loss, 4) + " | lr " + lr + " | grad norm " +
         FormatFixed(step.grad_norm, 3) + " | " + FormatFixed(step_ms, 1) + " ms | " +
         FormatCount(static_cast<int64_t>(tokens_per_s)) + " tok/s | bubble " +
         FormatFixed(100 * bubble, 0) + "% | peak " + FormatBytes(peak);
}

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Row(const std::string& name, const std::string& value) {
  std::string row = "  " + name;
  row.resize(24, ' ');
  return row + value + "\n";
}

}  // namespace

std::string RunSummary(const std::vector<StepSummary>& steps,
                       const std::vector<std::vector<RankStepStats>>& ranks,
                       double predicted_step_ms) {
  const size_t first = steps.size() > 1 ? 1 : 0;
  std::vector<double> step_ms, busiest_ms, bubble;
  int64_t peak = 0;
  for (size_t k = first; k < steps.size(); ++k) {
    double slowest = 0, compute = 0, mean_bubble = 0;
    for (const RankStepStats& r : ranks[k]) {
      slowest = std::max(slowest, r.step_ms);
      compute = std::max(compute, r.compute_ms);
      mean_bubble += r.BubbleFraction() / static_cast<double>(ranks[k].size());
      peak = std::max(peak, r.peak_memory_bytes);
    }
    step_ms.push_back(slowest);
    busiest_ms.push_back(compute);
    bubble.push_back(mean_bubble);
  }
  const double step = Median(step_ms), busiest = Median(busiest_ms);
  const int64_t tokens = steps.empty() ? 0 : steps.front().tokens;
  const int64_t from = steps.empty() ? 0 : steps[first].step;
  const int64_t to = steps.empty() ? 0 : steps.back().step;
  std::string out =
      "run summary (medians over steps " + std::to_string(from) + "-" + std::to_string(to) + "):\n";
  out += Row("step time", FormatMs(step));
  if (predicted_step_ms > 0) out += Row("predicted (plan)", FormatMs(predicted_step_ms));
  out += Row("busiest rank compute", FormatMs(busiest) + " (sum of its action times)");
  out += Row("step / compute", FormatFixed(busiest > 0 ? step / busiest : 0, 3));
  out += Row("tokens/s", FormatCount(static_cast<int64_t>(step > 0 ? tokens / (step / 1e3) : 0)));
  out += Row("bubble (mean rank)", FormatFixed(100 * Median(bubble), 1) + "%");
  out += Row("peak memory", FormatBytes(static_cast<double>(peak)) + " (largest rank)");
  return out;
}

std::string TraceToChromeJson(const std::vector<TraceEvent>& events, const RankMap& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (int r = 0; r < ranks.NumRanks(); ++r) {
    MeshCoords c = ranks.Coords(r);
    out.push_back(
        {{"ph", "M"},
         {"name", "thread_name"},
         {"pid", 0},
         {"tid", r},
         {"args",
          {{"name", "rank " + std::to_string(r) + " (dp " + std::to_string(c.dp) + ", pp " +
                        std::to_string(c.pp) + ", tp " + std::to_string(c.tp) + ")"}}}});
  }
  for (const TraceEvent& e : events) {
    out.push_back(
        {{"ph", "X"},
         {"name", ActionToString(e.action)},
         {"pid", 0},
         {"tid", e.rank},
         {"ts", e.start_ms * 1e3},
         {"dur", (e.end_ms - e.start_ms) * 1e3},
         {"args",
          {{"stage", e.action.stage}, {"micro_batch", e.action.micro_batch}, {"step", e.step}}}});
  }
  return nlohmann::json{{"traceEvents", out}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace trident
