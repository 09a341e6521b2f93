#include "planner/memory_model.h"

#include "core/text_format.h"

#include <algorithm>
#include <cmath>

namespace trident {

double LiveActivationFactor(ScheduleKind kind, int position, int pp, int micro_batches,
                            int virtual_stages) {
  const int in_flight = std::min(pp - position, micro_batches);
  switch (kind) {
    case ScheduleKind::kNaive:
      return 1;
    case ScheduleKind::kGpipe:
      return micro_batches;
    case ScheduleKind::k1F1B:
    case ScheduleKind::kPipeDream:
      return in_flight;
    case ScheduleKind::kZbH1:
      return std::min(pp, micro_batches);
    case ScheduleKind::kInterleaved1F1B: {
      const int v = virtual_stages;
      int chunks = std::min(v * micro_batches, 2 * (pp - position - 1) + (v - 1) * pp + 1);
      return static_cast<double>(chunks) / v;
    }
  }
  return micro_batches;
}

MemoryBreakdown PositionMemory(const PositionFootprint& f, int position, const MemoryContext& c) {
  double live = LiveActivationFactor(c.schedule, position, c.pp, c.micro_batches, c.virtual_stages);
  MemoryBreakdown m;
  m.params = f.param_bytes;
  m.grads = f.grad_bytes;
  m.optimizer = c.zero1 ? (f.optimizer_bytes + c.replicas - 1) / c.replicas : f.optimizer_bytes;
  if (c.GradBuckets()) m.grad_buckets = f.grad_bytes - f.tied_grad_bytes;
  m.activations = static_cast<int64_t>(std::ceil(live * static_cast<double>(f.stash_bytes)));
  if (c.schedule == ScheduleKind::kPipeDream) {
    m.weight_versions = static_cast<int64_t>(live - 1) * f.param_bytes;
  }
  m.workspace = f.workspace_bytes;
  m.fragmentation =
      static_cast<int64_t>(std::ceil(c.fragmentation * static_cast<double>(m.activations)));
  m.reserved = c.reserved_bytes;
  return m;
}

int64_t FullestPositionLowerBound(const PositionFootprint& whole, const MemoryContext& c) {
  const double live =
      LiveActivationFactor(c.schedule, c.pp - 1, c.pp, c.micro_batches, c.virtual_stages);
  const int64_t optimizer = c.zero1 ? whole.optimizer_bytes / c.replicas : whole.optimizer_bytes;
  const int64_t buckets = c.GradBuckets() ? whole.grad_bytes - whole.tied_grad_bytes : 0;
  const double sum =
      static_cast<double>(whole.param_bytes + whole.grad_bytes + optimizer + buckets) +
      (1 + c.fragmentation) * live * static_cast<double>(whole.stash_bytes);
  return static_cast<int64_t>(std::floor(sum / c.pp)) + c.reserved_bytes;
}

namespace {

std::string GiB(int64_t bytes) { return FormatBytes(static_cast<double>(bytes)); }

}  // namespace

std::string MemoryBreakdown::ToString() const {
  std::string text =
      "params " + GiB(params) + ", grads " + GiB(grads) + ", optimizer " + GiB(optimizer);
  if (grad_buckets > 0) text += ", gradient buckets " + GiB(grad_buckets);
  text += ", activations " + GiB(activations);
  if (weight_versions > 0) text += ", weight versions " + GiB(weight_versions);
  text += ", workspace " + GiB(workspace);
  if (fragmentation > 0) text += ", fragmentation " + GiB(fragmentation);
  return text + ", reserved " + GiB(reserved) + ", total " + GiB(Total());
}

}  // namespace trident
