#include "runtime/data/dataset.h"

#include <algorithm>

#include "core/check.h"
#include "runtime/data/shuffle.h"

namespace trident {

Status DataOptions::Validate() const {
  if (seq_len < 1) {
    return InvalidArgument("seq_len must be at least 1, got " + std::to_string(seq_len));
  }
  if (global_batch < 1) {
    return InvalidArgument("global_batch must be at least 1, got " + std::to_string(global_batch));
  }
  return Status::Ok();
}

int64_t Dataset::WindowOfSample(int64_t sample) const {
  TRIDENT_CHECK(sample >= 0) << "sample " << sample;
  int64_t n = NumWindows();
  IndexPermutation order(n, options_.seed, static_cast<uint64_t>(sample / n));
  return order(sample % n);
}

int64_t Dataset::EpochOfStep(int64_t step) const {
  TRIDENT_CHECK(step >= 0) << "step " << step;
  return step * options_.global_batch / NumWindows();
}

TokenBatch Dataset::Batch(int64_t step, int64_t first, int64_t count) const {
  const int64_t seq = options_.seq_len;
  TRIDENT_CHECK(step >= 0 && first >= 0 && count >= 0 && first + count <= options_.global_batch)
      << "step " << step << ", sequences [" << first << ", " << first + count
      << ") of a global batch of " << options_.global_batch;
  TokenBatch batch;
  batch.step = step;
  batch.first = first;
  batch.count = count;
  batch.seq_len = seq;
  batch.inputs_BS.resize(static_cast<size_t>(count * seq));
  batch.targets_BS.resize(static_cast<size_t>(count * seq));
  std::vector<Token> window(static_cast<size_t>(seq + 1));
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = WindowOfSample(step * options_.global_batch + first + j);
    ReadWindow(index, window);
    std::copy(window.begin(), window.end() - 1, batch.inputs_BS.begin() + j * seq);
    std::copy(window.begin() + 1, window.end(), batch.targets_BS.begin() + j * seq);
    batch.windows.push_back(index);
  }
  return batch;
}

}  // namespace trident
