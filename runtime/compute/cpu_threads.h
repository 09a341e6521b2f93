// CpuThreads: the threads one CpuCompute runs its loops on — the calling thread plus
// count − 1 workers of an Eigen::ThreadPool that this object owns.
//
// Why a pool per backend rather than Eigen::setNbThreads: Eigen's thread setting is global to
// the process (and takes effect only with OpenMP), so two ranks sharing a process — the
// in-process communication tests — would fight over it. Trident builds Eigen with
// EIGEN_DONT_PARALLELIZE and splits work itself: GEMMs by rows of C or by batch entries, the
// other ops by rows or columns.
// Thread-safety: ParallelFor may be called by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace trident {

class CpuThreads {
 public:
  // REQUIRES: count >= 1.
  explicit CpuThreads(int count);
  ~CpuThreads();
  CpuThreads(const CpuThreads&) = delete;
  CpuThreads& operator=(const CpuThreads&) = delete;

  int count() const { return count_; }

  // Calls fn(begin, end) on contiguous, disjoint ranges that cover [0, n) in order, one range
  // per thread used, and returns when all calls have returned. `work_per_item` (elements
  // touched by one item) decides how many threads are worth waking: small loops run on the
  // caller alone. Which range a thread gets never changes a result, so any fn that writes
  // only to its own items computes the same bits for every thread count.
  void ParallelFor(int64_t n, int64_t work_per_item,
                   const std::function<void(int64_t, int64_t)>& fn) const;

 private:
  struct Workers;

  int count_;
  std::unique_ptr<Workers> workers_;  // null when count_ == 1
};

}  // namespace trident
