// Float messages: integers up to 2^48 − 1, text of every byte value, float lists and single
// values survive a FloatWriter → FloatReader round trip bit for bit; every truncation of a
// message is an error (never a crash or a wrong value); and SendMessage / ReceiveMessage carry
// messages of any length between in-process ranks.
#include "runtime/train/float_message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/comm/inprocess_comm.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMaxInt = (int64_t{1} << 48) - 1;

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(FloatMessageTest, IntsRoundTrip) {
  const std::vector<int64_t> values = {
      0, 1, 65535, 65536, 65537, 4294967295, 4294967296, 123456789012345, kMaxInt - 1, kMaxInt};
  FloatWriter w;
  for (int64_t v : values) w.Int(v);
  EXPECT_EQ(w.out().size(), 3 * values.size());
  for (float f : w.out()) {
    EXPECT_GE(f, 0.0f);
    EXPECT_LE(f, 65535.0f);  // every piece is exactly representable
  }
  FloatReader r(w.out());
  for (int64_t v : values) {
    StatusOr<int64_t> got = r.Int();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, v);
  }
  EXPECT_TRUE(r.AtEnd());
}

TEST(FloatMessageTest, TextOfEveryByteValueRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  FloatWriter w;
  w.Text(all);
  w.Text("");
  w.Text("token.weight");
  FloatReader r(w.out());
  for (const std::string& want : {all, std::string(), std::string("token.weight")}) {
    StatusOr<std::string> got = r.Text();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, want);
  }
  EXPECT_TRUE(r.AtEnd());
}

TEST(FloatMessageTest, FloatsAndValuesRoundTripBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> floats = {1.5f,   -2.25f, 0.0f, -0.0f, 3.4e38f,
                                     1e-45f, inf,    -inf, 1e-7f, 16777217.0f};
  FloatWriter w;
  w.Floats(floats);
  w.Floats({});
  w.Value(5.4123f);
  w.Value(std::numeric_limits<float>::quiet_NaN());
  FloatReader r(w.out());
  StatusOr<std::vector<float>> got = r.Floats();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), floats.size());
  for (size_t i = 0; i < floats.size(); ++i) EXPECT_TRUE(SameBits((*got)[i], floats[i])) << i;
  StatusOr<std::vector<float>> empty = r.Floats();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  StatusOr<float> value = r.Value();
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 5.4123f);
  StatusOr<float> nan = r.Value();
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan(*nan));
  EXPECT_TRUE(r.AtEnd());
}

// Reads the fields MixedMessage writes; the first error, or ok with every value checked.
Status ReadMixed(const std::vector<float>& message) {
  FloatReader r(message);
  TRIDENT_ASSIGN_OR_RETURN(int64_t layer, r.Int());
  TRIDENT_ASSIGN_OR_RETURN(std::string name, r.Text());
  TRIDENT_ASSIGN_OR_RETURN(std::vector<float> values, r.Floats());
  TRIDENT_ASSIGN_OR_RETURN(float loss, r.Value());
  EXPECT_EQ(layer, 7);
  EXPECT_EQ(name, "attn.qkv.weight");
  EXPECT_EQ(values, (std::vector<float>{0.5f, -1.0f, 2.0f}));
  EXPECT_EQ(loss, 5.5f);
  EXPECT_TRUE(r.AtEnd());
  return Status::Ok();
}

std::vector<float> MixedMessage() {
  FloatWriter w;
  w.Int(7);
  w.Text("attn.qkv.weight");
  w.Floats({0.5f, -1.0f, 2.0f});
  w.Value(5.5f);
  return w.out();
}

TEST(FloatMessageTest, EveryTruncationIsAnError) {
  const std::vector<float> full = MixedMessage();
  Status whole = ReadMixed(full);
  ASSERT_TRUE(whole.ok()) << whole.ToString();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<float> cut(full.begin(), full.begin() + static_cast<int64_t>(n));
    Status status = ReadMixed(cut);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << "cut at " << n;
    EXPECT_THAT(status.message(), HasSubstr("truncated")) << "cut at " << n;
  }
}

TEST(FloatMessageTest, LengthBeyondTheMessageIsAnError) {
  FloatWriter w;
  w.Int(kMaxInt);  // claims 2^48 − 1 characters or floats; none follow
  w.Value(65.0f);
  {
    FloatReader r(w.out());
    EXPECT_EQ(r.Text().status().code(), StatusCode::kInternal);
  }
  {
    FloatReader r(w.out());
    EXPECT_EQ(r.Floats().status().code(), StatusCode::kInternal);
  }
  std::vector<float> empty;
  FloatReader r(empty);
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(r.Value().status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.Int().status().code(), StatusCode::kInternal);
}

TEST(FloatMessageTest, SendAndReceiveBetweenRanks) {
  std::vector<float> big(100000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
  const std::vector<float> mixed = MixedMessage();
  const std::chrono::milliseconds timeout = std::chrono::seconds(30);
  Status status = RunInProcess(3, [&](Comm& comm) -> Status {
    if (comm.Rank() != 0) {
      const std::vector<float>& mine = comm.Rank() == 1 ? big : mixed;
      TRIDENT_RETURN_IF_ERROR(SendMessage(comm, {}, 0, timeout));
      return SendMessage(comm, mine, 0, timeout);
    }
    for (int source : {2, 1}) {
      TRIDENT_ASSIGN_OR_RETURN(std::vector<float> empty, ReceiveMessage(comm, source, timeout));
      EXPECT_TRUE(empty.empty()) << "from " << source;
      TRIDENT_ASSIGN_OR_RETURN(std::vector<float> got, ReceiveMessage(comm, source, timeout));
      EXPECT_EQ(got, source == 1 ? big : mixed) << "from " << source;
    }
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

}  // namespace
}  // namespace trident
