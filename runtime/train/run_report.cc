#include "runtime/train/run_report.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/replica_lanes.h"
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
  j["cp"] = c.cp;
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

RunFigures MeasureRun(const Plan& plan, const std::vector<StepSummary>& steps,
                      const std::vector<std::vector<RankStepStats>>& ranks) {
  RunFigures f;
  f.predicted = plan.predicted;
  const int pp = plan.mesh.pp;
  const RankMap map = plan.MakeRankMap();
  f.positions.resize(static_cast<size_t>(pp));
  for (int p = 0; p < pp; ++p) f.positions[p].position = p;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& st = plan.stages[s];
    RunFigures::Position& pos = f.positions[s % pp];
    pos.stages.push_back(static_cast<int>(s));
    pos.predicted_compute_ms +=
        st.predicted_time_ms * LaneMicroBatches(plan.num_micro_batches, st.replicas, 0);
    pos.predicted_memory_bytes = std::max(pos.predicted_memory_bytes, st.predicted_memory_bytes);
  }
  const size_t first = steps.size() > 1 ? 1 : 0;
  std::vector<double> step_ms, busiest_ms, bubble;
  std::vector<std::vector<double>> position_ms(static_cast<size_t>(pp));
  for (size_t k = first; k < steps.size(); ++k) {
    double slowest = 0, compute = 0, mean_bubble = 0;
    std::vector<double> per_position(static_cast<size_t>(pp), 0.0);
    for (size_t r = 0; r < ranks[k].size(); ++r) {
      const RankStepStats& s = ranks[k][r];
      const int p = map.Coords(static_cast<int>(r)).pp;
      slowest = std::max(slowest, s.step_ms);
      compute = std::max(compute, s.compute_ms);
      per_position[p] = std::max(per_position[p], s.compute_ms);
      mean_bubble += s.BubbleFraction() / static_cast<double>(ranks[k].size());
      f.peak_memory_bytes = std::max(f.peak_memory_bytes, s.peak_memory_bytes);
      f.positions[p].peak_memory_bytes =
          std::max(f.positions[p].peak_memory_bytes, s.peak_memory_bytes);
    }
    step_ms.push_back(slowest);
    busiest_ms.push_back(compute);
    bubble.push_back(mean_bubble);
    for (int p = 0; p < pp; ++p) position_ms[p].push_back(per_position[p]);
  }
  f.step_ms = Median(step_ms);
  f.busiest_compute_ms = Median(busiest_ms);
  f.bubble_fraction = Median(bubble);
  for (int p = 0; p < pp; ++p) f.positions[p].compute_ms = Median(position_ms[p]);
  const int64_t tokens = steps.empty() ? 0 : steps.front().tokens;
  f.tokens_per_s = f.step_ms > 0 ? static_cast<double>(tokens) / (f.step_ms / 1e3) : 0;
  f.first_step = steps.empty() ? 0 : steps[first].step;
  f.last_step = steps.empty() ? 0 : steps.back().step;
  return f;
}

namespace {

// "+18.4%": measured against predicted; "" without a prediction.
std::string Error(double measured, double predicted) {
  if (predicted <= 0) return "";
  const double pct = 100 * (measured - predicted) / predicted;
  return (pct >= 0 ? "+" : "") + FormatFixed(pct, 1) + "%";
}

std::string Predicted(double measured, double predicted, const std::string& text) {
  return predicted > 0 ? text + "  (measured " + Error(measured, predicted) + ")" : "";
}

std::string StageList(const std::vector<int>& stages) {
  std::string out;
  for (int s : stages) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

}  // namespace

std::string RunSummary(const RunFigures& f) {
  const PlanPrediction& p = f.predicted;
  std::string out = "run summary (medians over steps " + std::to_string(f.first_step) + "-" +
                    std::to_string(f.last_step) + "):\n";
  out += Row("step time", FormatMs(f.step_ms));
  if (p.step_time_ms > 0) {
    out += Row("predicted (plan)", Predicted(f.step_ms, p.step_time_ms, FormatMs(p.step_time_ms)));
  }
  out += Row("busiest rank compute", FormatMs(f.busiest_compute_ms) + " (sum of its action times)");
  const double ratio = f.busiest_compute_ms > 0 ? f.step_ms / f.busiest_compute_ms : 0;
  out += Row("step / compute", FormatFixed(ratio, 3));
  out += Row("tokens/s", FormatCount(static_cast<int64_t>(f.tokens_per_s)));
  out +=
      Row("bubble (mean rank)",
          FormatFixed(100 * f.bubble_fraction, 1) + "%" +
              (p.step_time_ms > 0 ? " (predicted " + FormatFixed(100 * p.bubble_fraction, 1) + "%)"
                                  : ""));
  out += Row("peak memory",
             FormatBytes(static_cast<double>(f.peak_memory_bytes)) + " (largest rank)" +
                 (p.peak_memory_bytes > 0
                      ? "; predicted " + FormatBytes(static_cast<double>(p.peak_memory_bytes)) +
                            " (measured " +
                            Error(static_cast<double>(f.peak_memory_bytes),
                                  static_cast<double>(p.peak_memory_bytes)) +
                            ")"
                      : ""));
  bool predicted = false;
  for (const RunFigures::Position& pos : f.positions) predicted |= pos.predicted_compute_ms > 0;
  if (!predicted) return out;
  TextTable table({"position (stages)", "compute/step", "predicted", "error", "peak memory",
                   "predicted", "error"});
  for (const RunFigures::Position& pos : f.positions) {
    const double peak = static_cast<double>(pos.peak_memory_bytes);
    const double want = static_cast<double>(pos.predicted_memory_bytes);
    table.AddRow({std::to_string(pos.position) + " (" + StageList(pos.stages) + ")",
                  FormatMs(pos.compute_ms), FormatMs(pos.predicted_compute_ms),
                  Error(pos.compute_ms, pos.predicted_compute_ms), FormatBytes(peak),
                  FormatBytes(want), Error(peak, want)});
  }
  return out + "measured against predicted, per pipeline position:\n" + table.ToString();
}

std::string RunSummaryJson(const RunFigures& f) {
  auto pair = [](double measured, double predicted) {
    return nlohmann::json{{"measured", measured}, {"predicted", predicted}};
  };
  nlohmann::json positions = nlohmann::json::array();
  for (const RunFigures::Position& pos : f.positions) {
    positions.push_back(
        {{"position", pos.position},
         {"stages", pos.stages},
         {"compute_ms", pair(pos.compute_ms, pos.predicted_compute_ms)},
         {"peak_memory_bytes", pair(static_cast<double>(pos.peak_memory_bytes),
                                    static_cast<double>(pos.predicted_memory_bytes))}});
  }
  const PlanPrediction& p = f.predicted;
  nlohmann::json out = {{"steps", {f.first_step, f.last_step}},
                        {"step_time_ms", pair(f.step_ms, p.step_time_ms)},
                        {"busiest_compute_ms", f.busiest_compute_ms},
                        {"tokens_per_s", pair(f.tokens_per_s, p.tokens_per_s)},
                        {"bubble_fraction", pair(f.bubble_fraction, p.bubble_fraction)},
                        {"peak_memory_bytes", pair(static_cast<double>(f.peak_memory_bytes),
                                                   static_cast<double>(p.peak_memory_bytes))},
                        {"positions", positions}};
  return out.dump(2) + "\n";
}

std::string TraceToChromeJson(const std::vector<TraceEvent>& events, const RankMap& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (int r = 0; r < ranks.NumRanks(); ++r) {
    out.push_back(
        {{"ph", "M"},
         {"name", "thread_name"},
         {"pid", 0},
         {"tid", r},
         {"args", {{"name", "rank " + std::to_string(r) + " (" + ranks.Describe(r) + ")"}}}});
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
