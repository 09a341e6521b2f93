// SyntheticDataset: deterministic pseudo-random tokens for tests and benchmarks, behind the
// same Dataset interface (and so the same layout-independent order) as TextDataset.
//
// Token t of window w is SplitMix64(SplitMix64(seed ^ kSalt) + w·(S + 1) + t) mod vocab_size:
// a pure function of (seed, w, t), so any window can be read alone. The tokens are i.i.d.
// uniform, so a model can learn nothing beyond the unigram distribution (loss → ln vocab);
// use TextDataset when a falling loss matters.
// Thread-safety: immutable; const methods may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "runtime/data/dataset.h"

namespace trident {

struct SyntheticOptions {
  int64_t vocab_size = ByteTokenizer::kVocabSize;
  int64_t num_windows = 1024;  // N: windows per epoch
};

class SyntheticDataset final : public Dataset {
 public:
  // InvalidArgument for invalid options, vocab_size < 1 or num_windows < 1.
  static StatusOr<std::unique_ptr<SyntheticDataset>> Create(const DataOptions& options,
                                                            const SyntheticOptions& synthetic);

  std::string Description() const override;
  int64_t VocabSize() const override { return synthetic_.vocab_size; }
  int64_t NumWindows() const override { return synthetic_.num_windows; }
  void ReadWindow(int64_t window, std::span<Token> out) const override;

 private:
  SyntheticDataset(const DataOptions& options, const SyntheticOptions& synthetic);

  SyntheticOptions synthetic_;
  uint64_t token_key_;
};

}  // namespace trident
