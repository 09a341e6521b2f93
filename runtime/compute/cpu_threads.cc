#include "runtime/compute/cpu_threads.h"

#include <algorithm>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "core/check.h"

namespace trident {
namespace {

// Below this many elements per range, waking another thread costs more than it saves
// (a wake-up is a few microseconds; a core streams about 10^4 floats in that time).
constexpr int64_t kMinWorkPerRange = 1 << 14;

}  // namespace

struct CpuThreads::Workers {
  explicit Workers(int count) : pool(count) {}
  Eigen::ThreadPool pool;
};

CpuThreads::CpuThreads(int count) : count_(count) {
  TRIDENT_CHECK(count >= 1) << "CpuThreads needs at least one thread, got " << count;
  if (count > 1) workers_ = std::make_unique<Workers>(count - 1);
}

CpuThreads::~CpuThreads() = default;

void CpuThreads::ParallelFor(int64_t n, int64_t work_per_item,
                             const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  const int64_t total_work = n * std::max<int64_t>(work_per_item, 1);
  const int64_t ranges =
      std::min<int64_t>({count_, n, std::max<int64_t>(total_work / kMinWorkPerRange, 1)});
  if (ranges == 1) {
    fn(0, n);
    return;
  }
  // Range r is [r·n / ranges, (r + 1)·n / ranges): sizes differ by at most one item.
  Eigen::Barrier done(static_cast<unsigned>(ranges - 1));
  for (int64_t r = 1; r < ranges; ++r) {
    workers_->pool.Schedule([&fn, &done, r, n, ranges] {
      fn(r * n / ranges, (r + 1) * n / ranges);
      done.Notify();
    });
  }
  fn(0, n / ranges);
  done.Wait();
}

}  // namespace trident
