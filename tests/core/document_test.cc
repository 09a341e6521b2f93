// Strict reading: each kind of mistake names file:line:column, the key path and a hint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/document.h"
#include "tests/core/test_values.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& text) {
  StatusOr<ModelSpec> spec = ParseModelSpec(text, "m.yaml");
  EXPECT_FALSE(spec.ok()) << "parsed:\n" << text;
  return spec.ok() ? "" : spec.status().message();
}

// A valid model document with `line` replaced (by key) or appended.
std::string Model(const std::string& key, const std::string& line) {
  std::string text = "\n" + ModelSpecToYaml(testing::TinyGpt());
  size_t at = text.find("\n" + key + ":");
  if (at == std::string::npos) return text.substr(1) + line + "\n";
  size_t end = text.find('\n', at + 1);
  return text.substr(1, at) + line + text.substr(end);
}

TEST(Document, UnknownKeyIsRejectedWithTheAllowedKeys) {
  std::string message = ErrorOf(Model("hiden", "hiden: 64"));
  EXPECT_THAT(message, HasSubstr("m.yaml:"));
  EXPECT_THAT(message, HasSubstr("hiden: unknown key"));
  EXPECT_THAT(message, HasSubstr("allowed keys here:"));
  EXPECT_THAT(message, HasSubstr("hidden"));
}

TEST(Document, WrongTypeNamesLineColumnAndExpectation) {
  std::string text = Model("hidden", "hidden: sixty-four");
  int line = 1;
  for (size_t i = 0; i < text.find("hidden:"); ++i) line += text[i] == '\n';
  std::string message = ErrorOf(text);
  EXPECT_THAT(message, HasSubstr("m.yaml:" + std::to_string(line) +
                                 ":9: hidden: expected an "
                                 "integer, got 'sixty-four'"));
}

TEST(Document, MissingKey) {
  std::string text = ModelSpecToYaml(testing::TinyGpt());
  text.erase(text.find("heads: 4\n"), 9);
  EXPECT_THAT(ErrorOf(text), HasSubstr("heads: missing required key"));
}

TEST(Document, InconsistentValueIsLocatedAtItsKey) {
  std::string message = ErrorOf(Model("heads", "heads: 5"));
  EXPECT_THAT(message, HasSubstr("heads: 5 heads do not divide hidden 64"));
  EXPECT_THAT(message, HasSubstr("hint:"));
}

TEST(Document, NestedPathsInLists) {
  std::string text = ModelSpecToYaml(testing::TinyGpt());
  size_t at = text.find("gpt_block");
  text.replace(at, 9, "gpt_blok");
  std::string message = ErrorOf(text);
  EXPECT_THAT(message, HasSubstr("layers[1].kind: unknown value 'gpt_blok'"));
  EXPECT_THAT(message, HasSubstr("use one of: embedding, gpt_block"));
}

TEST(Document, SyntaxErrorHasALocation) {
  EXPECT_THAT(ErrorOf("format_version: 1\nkind: model\nlayers: [\n"),
              HasSubstr("m.yaml:4:1: YAML syntax error"));
}

TEST(Document, WrongKindAndVersion) {
  std::string cluster = ClusterSpecToYaml(testing::TwoNodes());
  EXPECT_THAT(ErrorOf(cluster), HasSubstr("kind: expected a model file, got kind 'cluster'"));
  EXPECT_THAT(ErrorOf(Model("format_version", "format_version: 2")),
              HasSubstr("unsupported version 2"));
}

TEST(Document, NonFiniteNumbersAreRejected) {
  EXPECT_THAT(ErrorOf(Model("dropout", "dropout: .nan")), HasSubstr("expected a finite number"));
}

TEST(Document, PeekKind) {
  StatusOr<std::string> kind = PeekDocumentKind(PlanToYaml(testing::TinyPlan()), "p.yaml");
  ASSERT_TRUE(kind.ok());
  EXPECT_EQ(*kind, "plan");
}

TEST(PlanCheck, DevicesMustMatchTheMesh) {
  Plan plan = testing::TinyPlan();
  plan.devices = 6;
  FieldCheck error = plan.Check();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->key_path, "devices");
  EXPECT_THAT(error->message, HasSubstr("4 devices but devices is 6"));
}

TEST(PlanCheck, NonUniformReplication) {
  Plan plan = testing::TinyPlan();
  plan.stages[1].replicas = 1;  // 2 + 1 positions-replicas, tp 1 -> 3 devices
  plan.devices = 3;
  EXPECT_FALSE(plan.Check()) << plan.Check()->message;
  EXPECT_EQ(plan.MakeRankMap().NumRanks(), 3);
}

TEST(PlanCheck, TensorParallelMustDivideHeadsAndNodes) {
  Plan plan = testing::TinyPlan();
  plan.mesh.tp = 3;
  ASSERT_TRUE(plan.Check());
  EXPECT_THAT(plan.Check()->message, HasSubstr("does not divide 4 heads"));
  plan = testing::TinyPlan();
  plan.devices_per_node = 2;
  plan.mesh = {1, 2, 4};
  plan.devices = 8;
  for (PlanStage& s : plan.stages) s.replicas = 1;
  ASSERT_TRUE(plan.Check());
  EXPECT_THAT(plan.Check()->message, HasSubstr("a tp group would span nodes"));
}

}  // namespace
}  // namespace trident
