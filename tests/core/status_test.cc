#include "core/status.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace trident {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument(std::to_string(x) + " is odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  TRIDENT_ASSIGN_OR_RETURN(int half, Half(x));
  TRIDENT_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckQuarter(int x) {
  TRIDENT_RETURN_IF_ERROR(Quarter(x).status());
  return Status::Ok();
}

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status error = NotFound("x.yaml: no such file");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), StatusCode::kNotFound);
  EXPECT_EQ(error.WithPrefix("plan").message(), "plan: x.yaml: no such file");
}

TEST(Status, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*Quarter(12), 3);
  StatusOr<int> odd = Quarter(6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "3 is odd");
  EXPECT_TRUE(CheckQuarter(8).ok());
  EXPECT_EQ(CheckQuarter(7).message(), "7 is odd");
}

TEST(StatusDeathTest, OkStatusInStatusOrAborts) {
  EXPECT_DEATH({ StatusOr<int> bad(Status::Ok()); }, "StatusOr constructed from an ok Status");
}

TEST(CheckDeathTest, FailedCheckNamesFileLineAndMessage) {
  EXPECT_DEATH({ TRIDENT_CHECK(1 + 1 == 3) << "arithmetic " << 42; },
               "CHECK failed at .*status_test.cc:[0-9]+: 1 \\+ 1 == 3: arithmetic 42");
}

}  // namespace
}  // namespace trident
