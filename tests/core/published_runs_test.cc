// published_runs files (core/published_runs.h): a good file read, and each mistake named by
// file:line:column and key path, a failed run check included.
#include "core/published_runs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace trident {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kGood[] = R"(format_version: 1
kind: published_runs
name: two-runs
source: a paper, Table 1
cluster: dgx-a100-80gb
vocab_size: 51200
runs:
  - name: small
    step_s: 1.5
    megatron: --num-layers 2
  - name: large
    step_s: 3.0
    megatron: >-
      --num-layers 4
)";

// kGood with `from` replaced by `to`.
std::string Good(const std::string& from, const std::string& to) {
  std::string text = kGood;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string ErrorOf(const std::string& text, const PublishedRunCheck& check = {}) {
  StatusOr<PublishedRuns> runs = ParsePublishedRuns(text, "p.yaml", check);
  EXPECT_FALSE(runs.ok()) << "parsed:\n" << text;
  return runs.ok() ? "" : runs.status().message();
}

TEST(PublishedRunsTest, ReadsAGoodFile) {
  StatusOr<PublishedRuns> runs = ParsePublishedRuns(kGood, "p.yaml");
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  EXPECT_EQ(runs->name, "two-runs");
  EXPECT_EQ(runs->cluster, "dgx-a100-80gb");
  EXPECT_EQ(runs->vocab_size, 51200);
  ASSERT_EQ(runs->runs.size(), 2u);
  EXPECT_EQ(runs->runs[1], (PublishedRun{"large", 3.0, "--num-layers 4"}));
  EXPECT_EQ(runs->ToString(), "two-runs: 2 published runs on dgx-a100-80gb");
}

TEST(PublishedRunsTest, WritesBackToItself) {
  StatusOr<PublishedRuns> runs = ParsePublishedRuns(kGood, "p.yaml");
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<PublishedRuns> again = ParsePublishedRuns(PublishedRunsToYaml(*runs), "again.yaml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *runs);
}

TEST(PublishedRunsTest, VocabSizeIsOptional) {
  StatusOr<PublishedRuns> runs = ParsePublishedRuns(Good("vocab_size: 51200\n", ""), "p.yaml");
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  EXPECT_EQ(runs->vocab_size, 0);
}

TEST(PublishedRunsTest, UnknownKeyNamesFileLineAndKey) {
  EXPECT_THAT(ErrorOf(Good("    step_s: 1.5\n", "    step_s: 1.5\n    seconds: 1.5\n")),
              StartsWith("p.yaml:10:5: runs[0].seconds: unknown key"));
  EXPECT_THAT(ErrorOf(Good("cluster:", "notes: x\ncluster:")),
              StartsWith("p.yaml:5:1: notes: unknown key"));
}

TEST(PublishedRunsTest, MissingStepTimeNamesTheRun) {
  const std::string message = ErrorOf(Good("    step_s: 3.0\n", ""));
  EXPECT_THAT(message, StartsWith("p.yaml:11:"));
  EXPECT_THAT(message, HasSubstr("runs[1].step_s: missing required key"));
}

TEST(PublishedRunsTest, StepTimeMustBePositive) {
  EXPECT_THAT(ErrorOf(Good("step_s: 3.0", "step_s: -3.0")),
              StartsWith("p.yaml:12:13: runs[1].step_s: must be positive, got -3;"));
  EXPECT_THAT(ErrorOf(Good("step_s: 3.0", "step_s: 0")), HasSubstr("must be positive"));
}

TEST(PublishedRunsTest, RunNamesAreUnique) {
  EXPECT_THAT(ErrorOf(Good("name: large", "name: small")),
              StartsWith("p.yaml:11:11: runs[1].name: 'small' names an earlier run too"));
}

TEST(PublishedRunsTest, AFailedRunCheckIsReportedAtTheRunsArguments) {
  auto check = [](const PublishedRuns& file, const PublishedRun& run) -> Status {
    EXPECT_EQ(file.cluster, "dgx-a100-80gb");  // the file's keys come before its runs
    if (run.name == "large") return InvalidArgument("run 'large': --num-layers: too many");
    return Status::Ok();
  };
  const std::string message = ErrorOf(kGood, check);
  EXPECT_THAT(message, StartsWith("p.yaml:13:15: runs[1].megatron: run 'large': --num-layers"));
  EXPECT_THAT(message, HasSubstr("hint: correct the run's Megatron-LM arguments"));
}

TEST(StepErrorsTest, SignedErrorsTheirMeanAndTheWorstRun) {
  PublishedRuns runs;
  runs.runs = {{"a", 2.0, "x"}, {"b", 4.0, "x"}, {"c", 10.0, "x"}, {"d", 5.0, "x"}};
  // a: 1.5 s, 25% too fast; b: not predicted; c: 11 s, 10% too slow; d: exact.
  const StepErrors errors = CompareStepTimes(runs, {1.5, std::nullopt, 11.0, 5.0});
  ASSERT_EQ(errors.error_pct.size(), 4u);
  EXPECT_DOUBLE_EQ(*errors.error_pct[0], -25.0);
  EXPECT_FALSE(errors.error_pct[1].has_value());
  EXPECT_DOUBLE_EQ(*errors.error_pct[2], 10.0);
  EXPECT_DOUBLE_EQ(*errors.error_pct[3], 0.0);
  EXPECT_DOUBLE_EQ(errors.mean_abs_pct, 35.0 / 3);
  EXPECT_DOUBLE_EQ(errors.max_abs_pct, 25.0);
  EXPECT_EQ(errors.worst, 0);
  EXPECT_EQ(errors.CountBeyond(5.0), 2);
  EXPECT_EQ(errors.CountBeyond(25.0), 0);
}

TEST(StepErrorsTest, NoRunPredictedHasNoWorstRun) {
  PublishedRuns runs;
  runs.runs = {{"a", 2.0, "x"}};
  const StepErrors errors = CompareStepTimes(runs, {std::nullopt});
  EXPECT_EQ(errors.worst, -1);
  EXPECT_EQ(errors.mean_abs_pct, 0.0);
  EXPECT_EQ(errors.CountBeyond(0.0), 0);
}

}  // namespace
}  // namespace trident
