#include "runtime/data/tokenizer.h"

#include "core/check.h"

namespace trident {

std::vector<Token> ByteTokenizer::Encode(std::string_view text) const {
  std::vector<Token> tokens(text.size());
  EncodeInto(text, tokens);
  return tokens;
}

void ByteTokenizer::EncodeInto(std::string_view text, std::span<Token> out) const {
  TRIDENT_CHECK_EQ(out.size(), text.size());
  for (size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
}

StatusOr<std::string> ByteTokenizer::Decode(std::span<const Token> tokens) const {
  std::string text(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= kVocabSize) {
      return InvalidArgument("token " + std::to_string(tokens[i]) + " at position " +
                             std::to_string(i) + " is outside the byte vocabulary 0..255");
    }
    text[i] = static_cast<char>(static_cast<unsigned char>(tokens[i]));
  }
  return text;
}

}  // namespace trident
