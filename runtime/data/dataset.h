// Dataset: the token sequences a training run reads, in an order that does not depend on the
// parallel layout.
//
// Shapes: B = global batch (sequences per step), S = seq_len, N = samples per epoch.
//
// A dataset is a store of N windows of S + 1 tokens (inputs are tokens 0..S-1, next-token
// targets 1..S) plus one order over them: the run's sample stream. Sample g of the stream
// (g = 0, 1, ...) is window IndexPermutation(N, seed, epoch)(g mod N) with epoch = g / N, so
// each epoch visits every window once in a fresh order. Step k's global batch is samples
// k·B .. k·B + B − 1 of the stream, wrapping into the next epoch's order when an epoch ends
// inside a step. Batch(step, first, count) returns sequences [first, first + count) of that
// global batch: any split over replicas and micro-batches reads exactly its slice, and the
// union over a split is the whole batch (so losses agree across plans, DESIGN.md §6). In a
// plan with micro-batches of b sequences, micro-batch j reads Batch(step, j·b, b), whichever
// replica runs it (j mod r).
//
// Subclasses provide the windows (TextDataset, SyntheticDataset); the order lives here.
// Thread-safety: const methods may be called from any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/data/tokenizer.h"

namespace trident {

struct DataOptions {
  int64_t seq_len = 0;       // S: input tokens per sequence; a window holds S + 1
  int64_t global_batch = 0;  // B: sequences per step over all replicas and micro-batches
  uint64_t seed = 0;         // chooses the order (and a synthetic dataset's tokens)

  // InvalidArgument unless seq_len >= 1 and global_batch >= 1.
  Status Validate() const;
  bool operator==(const DataOptions&) const = default;
};

// Sequences [first, first + count) of step `step`'s global batch; row-major [count, S].
struct TokenBatch {
  int64_t step = 0;
  int64_t first = 0;
  int64_t count = 0;
  int64_t seq_len = 0;
  std::vector<Token> inputs_BS;   // row j: tokens 0..S-1 of window windows[j]
  std::vector<Token> targets_BS;  // row j: tokens 1..S of the same window
  std::vector<int64_t> windows;   // which window each row holds (storage order)

  bool operator==(const TokenBatch&) const = default;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const DataOptions& options() const { return options_; }
  // What the data is, for logs: "text /path/file (123456 tokens)".
  virtual std::string Description() const = 0;
  // Tokens are in [0, VocabSize()).
  virtual int64_t VocabSize() const = 0;
  // N: windows per epoch, >= 1.
  virtual int64_t NumWindows() const = 0;
  // Writes the S + 1 tokens of window `window`.
  // REQUIRES: 0 <= window < NumWindows(), out.size() == S + 1.
  virtual void ReadWindow(int64_t window, std::span<Token> out) const = 0;

  // The window that sample `sample` of the stream reads. REQUIRES: sample >= 0.
  int64_t WindowOfSample(int64_t sample) const;
  // The epoch that step `step`'s first sample belongs to. REQUIRES: step >= 0.
  int64_t EpochOfStep(int64_t step) const;
  // REQUIRES: step >= 0, first >= 0, count >= 0, first + count <= global_batch.
  TokenBatch Batch(int64_t step, int64_t first, int64_t count) const;

 protected:
  explicit Dataset(const DataOptions& options) : options_(options) {}

 private:
  DataOptions options_;
};

}  // namespace trident
