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

namespace {

int64_t CeilDiv(int64_t bytes, int n) { return (bytes + n - 1) / n; }

bool Shards(DpSharding level, DpSharding what) {
  return static_cast<int>(level) >= static_cast<int>(what);
}

}  // namespace

PositionFootprint AddChunk(PositionFootprint total, const PositionFootprint& chunk) {
  total.param_bytes += chunk.param_bytes;
  total.grad_bytes += chunk.grad_bytes;
  total.optimizer_bytes += chunk.optimizer_bytes;
  total.stash_bytes += chunk.stash_bytes;
  total.workspace_bytes = std::max(total.workspace_bytes, chunk.workspace_bytes);
  total.layer_param_bytes = std::max(total.layer_param_bytes, chunk.layer_param_bytes);
  total.layer_grad_bytes = std::max(total.layer_grad_bytes, chunk.layer_grad_bytes);
  total.grad_transient_bytes = std::max(total.grad_transient_bytes, chunk.grad_transient_bytes);
  total.param_transient_bytes = std::max(total.param_transient_bytes, chunk.param_transient_bytes);
  return total;
}

MemoryBreakdown PositionMemory(const PositionFootprint& f, int position, const MemoryContext& c) {
  double live = LiveActivationFactor(c.schedule, position, c.pp, c.micro_batches, c.virtual_stages);
  const int n = c.ShardRanks();
  MemoryBreakdown m;
  m.params = Shards(c.sharding, DpSharding::kFull) ? CeilDiv(f.param_bytes, n) : f.param_bytes;
  m.grads = Shards(c.sharding, DpSharding::kGradients) ? CeilDiv(f.grad_bytes, n) : f.grad_bytes;
  m.optimizer = Shards(c.sharding, DpSharding::kOptimizer) ? CeilDiv(f.optimizer_bytes, n)
                                                           : f.optimizer_bytes;
  if (Shards(c.sharding, DpSharding::kGradients)) {
    // A split tie's table stays whole, and is gathered through a bucket of its own.
    const int64_t tied = f.tied_grad_bytes;
    m.grads += tied - CeilDiv(tied, n);
    m.grad_buckets = f.grad_transient_bytes + tied + CeilDiv(tied, n);
  } else if (c.sharding == DpSharding::kOptimizer && n > 1) {
    m.grad_buckets = f.grad_bytes + CeilDiv(f.grad_bytes, n);
  } else if (c.GradBuckets()) {
    m.grad_buckets = f.grad_bytes - f.tied_grad_bytes;
  }
  if (c.sharding == DpSharding::kFull) {
    // One layer's parameters at a time, gathered without prefetch, as the runtime runs it, and
    // released before its gradients are summed: the larger of the two transients counts.
    m.params += f.tied_param_bytes - CeilDiv(f.tied_param_bytes, n);
    m.gathered_layers = std::max<int64_t>(0, f.param_transient_bytes - f.grad_transient_bytes);
  }
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

double OptimizerStepBytes(const PositionFootprint& f, const MemoryBreakdown& share,
                          const MemoryContext& c) {
  const double stepped = Shards(c.sharding, DpSharding::kOptimizer) ? 1.0 / c.ShardRanks() : 1.0;
  const double params = stepped * static_cast<double>(f.param_bytes);
  const double grads = stepped * static_cast<double>(f.grad_bytes);
  return 2 * grads + 2 * static_cast<double>(share.optimizer) +
         (c.master_weights ? 3 : 2) * params + static_cast<double>(share.grads);
}

int64_t FullestPositionLowerBound(const PositionFootprint& whole, const MemoryContext& c) {
  const double live =
      LiveActivationFactor(c.schedule, c.pp - 1, c.pp, c.micro_batches, c.virtual_stages);
  const int n = c.ShardRanks();
  auto share = [&](int64_t bytes, DpSharding what) {
    return Shards(c.sharding, what) ? bytes / n : bytes;
  };
  const bool whole_buckets = c.GradBuckets() && !Shards(c.sharding, DpSharding::kGradients);
  const int64_t buckets = whole_buckets ? whole.grad_bytes - whole.tied_grad_bytes : 0;
  const int64_t state = share(whole.param_bytes, DpSharding::kFull) +
                        share(whole.grad_bytes, DpSharding::kGradients) +
                        share(whole.optimizer_bytes, DpSharding::kOptimizer) + buckets;
  const double sum = static_cast<double>(state) +
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
  if (gathered_layers > 0) text += ", gathered layers " + GiB(gathered_layers);
  text += ", activations " + GiB(activations);
  if (weight_versions > 0) text += ", weight versions " + GiB(weight_versions);
  text += ", workspace " + GiB(workspace);
  if (fragmentation > 0) text += ", fragmentation " + GiB(fragmentation);
  return text + ", reserved " + GiB(reserved) + ", total " + GiB(Total());
}

}  // namespace trident
