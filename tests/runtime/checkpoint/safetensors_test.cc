#include "runtime/checkpoint/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace trident {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string LittleEndian64(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// A file with header `json` followed by `data_bytes` zero bytes.
std::string File(const std::string& json, size_t data_bytes) {
  return LittleEndian64(json.size()) + json + std::string(data_bytes, '\0');
}

TensorMap Sample() {
  const float inf = std::numeric_limits<float>::infinity();
  TensorMap tensors;
  tensors["b.weight"] = {{2, 3}, {1.5f, -0.0f, inf, -inf, 1e-45f, 3.4e38f}};
  tensors["a.bias"] = {{3}, {0.1f, 0.2f, std::numeric_limits<float>::quiet_NaN()}};
  tensors["c.scalar"] = {{}, {42.0f}};
  tensors["d.empty"] = {{0, 4}, {}};
  return tensors;
}

TEST(SafetensorsTest, HeaderFollowsTheFormat) {
  TensorMap tensors;
  tensors["x"] = {{2}, {1.0f, 2.0f}};
  StatusOr<std::string> bytes = SerializeSafetensors(tensors, {{"step", "3"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const std::string json =
      R"({"__metadata__":{"step":"3"},"x":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})";
  const size_t padded = (json.size() + 8 + 7) / 8 * 8 - 8;  // data starts at a multiple of 8
  EXPECT_EQ(bytes->substr(0, 8), LittleEndian64(padded));
  EXPECT_EQ(bytes->substr(8, padded), json + std::string(padded - json.size(), ' '));
  float values[2];
  std::memcpy(values, bytes->data() + 8 + padded, sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], 2.0f);
  EXPECT_EQ(bytes->size(), 8 + padded + 8);
}

TEST(SafetensorsTest, RoundTripIsBitExact) {
  TensorMap tensors = Sample();
  StatusOr<std::string> bytes = SerializeSafetensors(tensors, {{"k", "v"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  StatusOr<SafetensorsIndex> index = ParseSafetensorsIndex(*bytes, "x.safetensors");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->data_start % 8, 0u);
  EXPECT_EQ(index->metadata, (MetadataMap{{"k", "v"}}));
  ASSERT_EQ(index->tensors.size(), tensors.size());
  TensorMap read;
  for (const auto& [name, entry] : index->tensors) {
    read[name] = ReadSafetensorsEntry(*bytes, *index, entry, Slice::Full());
    EXPECT_TRUE(read[name].BitwiseEquals(tensors[name])) << name;
  }
  EXPECT_EQ(SerializeSafetensors(read, index->metadata).value(), *bytes);
}

TEST(SafetensorsTest, ReadsAHandWrittenFileWithPaddingAndNoMetadata) {
  std::string json = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}   )";
  std::string bytes = LittleEndian64(json.size()) + json;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) bytes.append(reinterpret_cast<const char*>(&v), 4);
  StatusOr<SafetensorsIndex> index = ParseSafetensorsIndex(bytes, "hand.safetensors");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  HostTensor column =
      ReadSafetensorsEntry(bytes, *index, index->tensors["w"], Slice::Columns(1, 2));
  EXPECT_EQ(column.shape, (Shape{2, 1}));
  EXPECT_EQ(column.values, (std::vector<float>{2.0f, 4.0f}));
}

TEST(SafetensorsTest, SerializeRejectsInconsistentTensors) {
  TensorMap tensors;
  tensors["x"] = {{2, 2}, {1.0f}};
  EXPECT_THAT(SerializeSafetensors(tensors, {}).status().message(),
              HasSubstr("tensor 'x' has shape [2, 2] but 1 values"));
  TensorMap reserved;
  reserved["__metadata__"] = {{1}, {1.0f}};
  EXPECT_FALSE(SerializeSafetensors(reserved, {}).ok());
  TensorMap bad_utf8;
  bad_utf8["\xff"] = {{1}, {1.0f}};
  EXPECT_THAT(SerializeSafetensors(bad_utf8, {}).status().message(), HasSubstr("UTF-8"));
}

struct CorruptCase {
  std::string what;
  std::string bytes;
  std::string message;
};

// Damage to the length field, the JSON text and the metadata.
std::vector<CorruptCase> FramingCases() {
  return {
      {"empty", "", "truncated: 0 bytes"},
      {"short", std::string("\x05\0\0", 3), "truncated: 3 bytes"},
      {"header past end", LittleEndian64(100) + "{}", "header length 100 runs past the end"},
      {"huge header", LittleEndian64(~uint64_t{0}) + "{}", "runs past the end of the file"},
      {"not json", File("{not json", 0), "malformed JSON header"},
      {"not an object", File("[1, 2]", 0), "malformed JSON header: it must start with '{'"},
      {"cut json", File(R"({"x":{"dtype":"F3)", 0), "malformed JSON header"},
      {"metadata not strings", File(R"({"__metadata__":{"step":3}})", 0),
       "__metadata__ must map strings to strings; key 'step' holds a number"},
      {"metadata not object", File(R"({"__metadata__":[]})", 0), "__metadata__ must be an object"},
  };
}

// Damage to one tensor's entry or to the layout of the data buffer.
std::vector<CorruptCase> EntryCases() {
  const std::string ok_entry = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  return {
      {"entry not object", File(R"({"x":3})", 0), "tensor 'x': expected an object"},
      {"bf16", File(R"({"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", 4),
       "tensor 'x': dtype BF16 is not supported"},
      {"no dtype", File(R"({"x":{"shape":[2],"data_offsets":[0,8]}})", 8), "dtype is missing"},
      {"unknown key", File(R"({"x":{)" + ok_entry + R"(,"extra":1}})", 8), "unknown key 'extra'"},
      {"negative dim", File(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "tensor 'x': shape must be a list of non-negative integers"},
      {"float dim", File(R"({"x":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8),
       "shape must be a list"},
      {"reversed offsets", File(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
       "data_offsets must be [begin, end]"},
      {"one offset", File(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", 8),
       "data_offsets must be"},
      {"offsets past data", File(R"({"x":{)" + ok_entry + "}}", 4),
       "tensor 'x': data_offsets [0, 8) run past the data buffer of 4 bytes"},
      {"count mismatch", File(R"({"x":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12),
       "tensor 'x': shape [2, 2] holds 4 F32 values but data_offsets [0, 12) span 12 bytes"},
      {"overflowing shape",
       File(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0),
       "holds too many F32 values"},
      {"overlap",
       File(R"({"x":{)" + ok_entry + R"(},"y":{"dtype":"F32","shape":[2],)" +
                R"("data_offsets":[4,12]}})",
            12),
       "tensors 'x' and 'y' overlap at data offset 4"},
      {"hole", File(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       "data bytes [0, 4) belong to no tensor"},
      {"trailing", File(R"({"x":{)" + ok_entry + "}}", 12), "data bytes [8, 12) at the end"},
  };
}

TEST(SafetensorsTest, CorruptFilesGiveSpecificErrors) {
  std::vector<CorruptCase> cases = FramingCases();
  for (CorruptCase& c : EntryCases()) cases.push_back(std::move(c));
  for (const CorruptCase& c : cases) {
    StatusOr<SafetensorsIndex> index = ParseSafetensorsIndex(c.bytes, "bad.safetensors");
    ASSERT_FALSE(index.ok()) << c.what;
    EXPECT_EQ(index.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(index.status().message(), StartsWith("bad.safetensors: ")) << c.what;
    EXPECT_THAT(index.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST(SafetensorsTest, EveryTruncationIsAnErrorNotACrash) {
  StatusOr<std::string> bytes = SerializeSafetensors(Sample(), {{"k", "v"}});
  ASSERT_TRUE(bytes.ok());
  for (size_t size = 0; size < bytes->size(); ++size) {
    EXPECT_FALSE(ParseSafetensorsIndex(bytes->substr(0, size), "t").ok()) << size;
  }
}

TEST(SafetensorsTest, CorruptedHeaderBytesNeverCrash) {
  // Every single-byte change of the length and the header either still parses into a
  // consistent index or is rejected; run under the sanitizers this shows no read goes astray.
  StatusOr<std::string> bytes = SerializeSafetensors(Sample(), {{"k", "v"}});
  ASSERT_TRUE(bytes.ok());
  const size_t data_start = ParseSafetensorsIndex(*bytes, "t")->data_start;
  for (size_t at = 0; at < data_start; ++at) {
    for (unsigned char value : {0x00, 0x22, 0x30, 0x39, 0x5D, 0x7D, 0xFF}) {
      std::string corrupt = *bytes;
      corrupt[at] = static_cast<char>(value);
      StatusOr<SafetensorsIndex> index = ParseSafetensorsIndex(corrupt, "t");
      if (!index.ok()) continue;
      for (const auto& [name, entry] : index->tensors) {
        HostTensor tensor = ReadSafetensorsEntry(corrupt, *index, entry, Slice::Full());
        EXPECT_EQ(static_cast<int64_t>(tensor.values.size()), *CountElements(entry.shape));
      }
    }
  }
}

}  // namespace
}  // namespace trident
