#include "runtime/data/text_dataset.h"

#include <string_view>
#include <utility>

#include "core/check.h"
#include "runtime/data/corpus.h"

namespace trident {

TextDataset::TextDataset(std::string text, std::string name, const DataOptions& options)
    : Dataset(options), text_(std::move(text)), name_(std::move(name)) {}

StatusOr<std::unique_ptr<TextDataset>> TextDataset::Open(const std::string& path,
                                                         const DataOptions& options) {
  return OpenFiles({path}, options);
}

StatusOr<std::unique_ptr<TextDataset>> TextDataset::OpenFiles(const std::vector<std::string>& paths,
                                                              const DataOptions& options) {
  TRIDENT_RETURN_IF_ERROR(options.Validate().WithPrefix("text dataset"));
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadCorpus(paths));
  std::string name = paths.size() == 1 ? paths.front()
                                       : paths.front() + " and " +
                                             std::to_string(paths.size() - 1) + " more files";
  return FromText(std::move(text), std::move(name), options);
}

StatusOr<std::unique_ptr<TextDataset>> TextDataset::FromText(std::string text, std::string name,
                                                             const DataOptions& options) {
  TRIDENT_RETURN_IF_ERROR(options.Validate().WithPrefix(name));
  const int64_t tokens = static_cast<int64_t>(text.size());
  const int64_t window = options.seq_len + 1;
  if (tokens < window) {
    return InvalidArgument(
        name + ": " + std::to_string(tokens) + " tokens (one per byte) are too few for one " +
        "sample of seq_len + 1 = " + std::to_string(window) + " tokens; hint: use a longer " +
        "text file" + (tokens >= 2 ? " or seq_len <= " + std::to_string(tokens - 1) : ""));
  }
  return std::unique_ptr<TextDataset>(new TextDataset(std::move(text), std::move(name), options));
}

std::string TextDataset::Description() const {
  return "text " + name_ + " (" + std::to_string(NumTokens()) + " byte tokens, " +
         std::to_string(NumWindows()) + " windows of " + std::to_string(options().seq_len + 1) +
         ")";
}

int64_t TextDataset::NumWindows() const { return (NumTokens() - 1) / options().seq_len; }

void TextDataset::ReadWindow(int64_t window, std::span<Token> out) const {
  const int64_t seq = options().seq_len;
  TRIDENT_CHECK(window >= 0 && window < NumWindows()) << "window " << window;
  TRIDENT_CHECK_EQ(static_cast<int64_t>(out.size()), seq + 1);
  std::string_view text(text_);
  ByteTokenizer().EncodeInto(text.substr(static_cast<size_t>(window * seq), out.size()), out);
}

}  // namespace trident
