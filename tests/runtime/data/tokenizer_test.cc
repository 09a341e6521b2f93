#include "runtime/data/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trident {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ByteTokenizerTest, TokenIsTheUnsignedByte) {
  ByteTokenizer tokenizer;
  EXPECT_THAT(tokenizer.Encode("Ab\n"), ElementsAre(65, 98, 10));
  EXPECT_THAT(tokenizer.Encode("\xC3\xA9"), ElementsAre(0xC3, 0xA9));  // é in UTF-8
  EXPECT_TRUE(tokenizer.Encode("").empty());
}

TEST(ByteTokenizerTest, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  ByteTokenizer tokenizer;
  std::vector<Token> tokens = tokenizer.Encode(all);
  ASSERT_EQ(tokens.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tokens[static_cast<size_t>(b)], b);
  StatusOr<std::string> text = tokenizer.Decode(tokens);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, all);
}

TEST(ByteTokenizerTest, DecodeRejectsTokensOutsideTheVocabulary) {
  ByteTokenizer tokenizer;
  std::vector<Token> too_big = {72, 256};
  StatusOr<std::string> text = tokenizer.Decode(too_big);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("token 256 at position 1"));
  std::vector<Token> negative = {-1};
  EXPECT_FALSE(tokenizer.Decode(negative).ok());
}

}  // namespace
}  // namespace trident
