// ByteTokenizer: the simplest tokenizer that handles any text — a token is one byte.
//
// The vocabulary has 256 tokens; the token of byte b is the unsigned value of b (0..255), so
// Decode(Encode(text)) == text for every byte string, including invalid UTF-8. Models that
// train on text read through this tokenizer need vocab_size >= 256.
// Thread-safety: stateless; any number of threads may use one instance.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trident {

using Token = int32_t;  // the type embeddings index with; a byte token is 0..255

class ByteTokenizer {
 public:
  static constexpr int64_t kVocabSize = 256;

  std::vector<Token> Encode(std::string_view text) const;
  // Writes the tokens of `text` to `out`. REQUIRES: out.size() == text.size().
  void EncodeInto(std::string_view text, std::span<Token> out) const;

  // The bytes of `tokens`; InvalidArgument naming the first token outside 0..255.
  StatusOr<std::string> Decode(std::span<const Token> tokens) const;
};

}  // namespace trident
