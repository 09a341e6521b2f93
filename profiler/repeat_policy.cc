#include "profiler/repeat_policy.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "core/text_format.h"

namespace trident {

double Quantile(std::vector<double> samples_ms, double q) {
  TRIDENT_CHECK(!samples_ms.empty()) << "the quantile of no samples";
  std::sort(samples_ms.begin(), samples_ms.end());
  double position = q * static_cast<double>(samples_ms.size() - 1);
  size_t below = static_cast<size_t>(position);
  size_t above = std::min(below + 1, samples_ms.size() - 1);
  double fraction = position - static_cast<double>(below);
  return samples_ms[below] + fraction * (samples_ms[above] - samples_ms[below]);
}

double SpreadPct(const std::vector<double>& samples_ms) {
  if (samples_ms.size() < 2) return 0;
  double median = Median(samples_ms);
  if (median <= 0) return 0;
  return (Quantile(samples_ms, 0.9) - Quantile(samples_ms, 0.1)) / median * 100.0;
}

Status RepeatPolicy::Validate() const {
  if (!(budget_ms > 0)) {
    return InvalidArgument("--time-budget-s " + FormatFixed(budget_ms / 1000, 3) +
                           ": give a positive number of seconds per measurement, e.g. 2");
  }
  if (max_repeats < 1 || min_repeats < 1 || warmup < 0) {
    return InvalidArgument("--max-repeats " + std::to_string(max_repeats) +
                           ": give at least 1 timed repeat");
  }
  return Status::Ok();
}

bool RepeatPolicy::WantsMore(const std::vector<double>& samples_ms, double spent_ms,
                             double repeat_cost_ms) const {
  const int taken = static_cast<int>(samples_ms.size());
  if (taken == 0) return true;
  if (taken >= warmup + max_repeats) return false;
  if (spent_ms + repeat_cost_ms > budget_ms) return false;
  if (taken < warmup + min_repeats || spent_ms < budget_ms / 4) return true;
  return SpreadPct(std::vector<double>(samples_ms.begin() + warmup, samples_ms.end())) >
         target_spread_pct;
}

RepeatPolicy RepeatPolicy::Share(int passes) const {
  RepeatPolicy share = *this;
  share.budget_ms = budget_ms / passes;
  share.min_repeats = (min_repeats + passes - 1) / passes;
  share.max_repeats = (max_repeats + passes - 1) / passes;
  return share;
}

}  // namespace trident
