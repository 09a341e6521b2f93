// TextDataset: a text file (or several, concatenated) read as a stream of byte tokens.
//
// Windows: with T tokens and S = seq_len, window k holds tokens [k·S, k·S + S] — a stride of
// S, so consecutive windows share one token (the last target of window k is the first input
// of window k + 1) and every token but the first is a target exactly once per epoch, as in
// Megatron-LM's GPT dataset. N = floor((T − 1) / S); a trailing remainder shorter than a
// window is never read. Example: T = 10, S = 4 gives windows [0..4] and [4..8], N = 2.
// The order of the windows is the Dataset's (seed, epoch) permutation.
// Memory: the whole text is held in memory, one byte per token.
// Thread-safety: immutable after Open; const methods may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/data/dataset.h"

namespace trident {

class TextDataset final : public Dataset {
 public:
  // Reads one file. NotFound / IoError name the file; InvalidArgument when the options are
  // invalid or the file has fewer than seq_len + 1 bytes (the message gives both sizes and
  // the fix).
  static StatusOr<std::unique_ptr<TextDataset>> Open(const std::string& path,
                                                     const DataOptions& options);
  // The concatenation of `paths` in the given order, byte for byte (no separator).
  static StatusOr<std::unique_ptr<TextDataset>> OpenFiles(const std::vector<std::string>& paths,
                                                          const DataOptions& options);
  // `text` itself; `name` stands for its source in messages.
  static StatusOr<std::unique_ptr<TextDataset>> FromText(std::string text, std::string name,
                                                         const DataOptions& options);

  int64_t NumTokens() const { return static_cast<int64_t>(text_.size()); }
  const std::string& name() const { return name_; }

  std::string Description() const override;
  int64_t VocabSize() const override { return ByteTokenizer::kVocabSize; }
  int64_t NumWindows() const override;
  void ReadWindow(int64_t window, std::span<Token> out) const override;

 private:
  TextDataset(std::string text, std::string name, const DataOptions& options);

  std::string text_;
  std::string name_;
};

}  // namespace trident
