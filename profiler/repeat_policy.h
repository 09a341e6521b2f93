// How many times a measurement is repeated, and the summary of its samples.
//
// A measurement repeats until one of:
//  - `warmup` + `max_repeats` repeats ran;
//  - the time budget is spent: the next repeat (predicted to cost as much as the median one
//    so far) would end past `budget_ms`, counted from the first repeat;
//  - at least `min_repeats` repeats after the warm-up ran, their spread is at most
//    `target_spread_pct`, and a quarter of the budget is spent: a steady run of samples from
//    a few milliseconds can still all come from one quiet or one busy moment of a shared
//    machine, so fast layers are sampled over a longer window.
// The first `warmup` repeats are not counted when later ones exist. When the budget allows
// no more than the warm-up (a layer whose one repeat takes seconds, where caches and branch
// predictors no longer matter), the warm-up repeats are the samples: at least one repeat
// always runs, so every layer gets a figure.
// The decision depends only on the samples and the time spent, so ranks that share their
// samples (the tp group) take the same decision and stay in step.
#pragma once

#include <cmath>
#include <vector>

#include "core/status.h"

namespace trident {

// The q-quantile (0 <= q <= 1) of `samples_ms`, interpolated linearly between the sorted
// samples (numpy's default). REQUIRES: samples_ms not empty.
double Quantile(std::vector<double> samples_ms, double q);
inline double Median(std::vector<double> samples_ms) {
  return Quantile(std::move(samples_ms), 0.5);
}

// `value` rounded to `decimals` decimal places, as profile and cluster files write figures:
// dividing by the power of ten (exact) gives the double nearest the rounded decimal, which
// prints as that decimal (multiplying by 0.001 instead can print 0.48290999999999995).
inline double RoundedTo(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// (p90 − p10) / median of `samples_ms`, in percent; 0 for fewer than two samples or a zero
// median. Example: 10.0, 10.2, 10.4, 11.0 ms: p10 10.06, p90 10.82, median 10.3 -> 7.4%.
double SpreadPct(const std::vector<double>& samples_ms);

struct RepeatPolicy {
  int warmup = 1;
  int min_repeats = 5;
  int max_repeats = 1000;
  double target_spread_pct = 5.0;
  double budget_ms = 2000.0;  // per measurement, warm-up included

  // InvalidArgument naming the flag (--time-budget-s, --max-repeats) for values out of range.
  Status Validate() const;

  // Whether to run another repeat, given every repeat's sample so far (warm-up included; the
  // quantity whose spread decides), the time spent and the median cost of one repeat.
  bool WantsMore(const std::vector<double>& samples_ms, double spent_ms,
                 double repeat_cost_ms) const;
  // The policy of one of `passes` (>= 1) turns at a measurement whose samples are pooled:
  // the budget, min_repeats and max_repeats shared out (rounded up), the warm-up kept.
  RepeatPolicy Share(int passes) const;
  // How many leading repeats of `taken` are warm-up, to be left out of the figures.
  int Skipped(int taken) const { return taken > warmup ? warmup : 0; }
};

}  // namespace trident
