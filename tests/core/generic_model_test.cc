// A model of generic layers (core/model_spec.h): what it may and may not hold, and its file.
#include <gtest/gtest.h>

#include <string>

#include "core/model_spec.h"

namespace trident {
namespace {

ModelSpec Generic() {
  ModelSpec model;
  model.name = "imported";
  model.max_seq_len = 1;
  model.layers = {{LayerKind::kGeneric, 7}};
  return model;
}

TEST(GenericModel, ValidatesWithoutShapesAndRoundTrips) {
  ModelSpec model = Generic();
  ASSERT_TRUE(model.Validate().ok()) << model.Validate().ToString();
  EXPECT_TRUE(model.IsGeneric());
  EXPECT_EQ(model.ToString(), "imported: 7 generic layers (costs from a profile only), seq 1");
  std::string text = ModelSpecToYaml(model);
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  StatusOr<ModelSpec> back = ParseModelSpec(text, "model.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, model);
  EXPECT_EQ(ModelSpecToYaml(*back), text);
}

TEST(GenericModel, RefusesOtherKindsAndShapes) {
  ModelSpec mixed = Generic();
  mixed.layers.push_back({LayerKind::kMlpBlock, 1});
  ASSERT_FALSE(mixed.Validate().ok());
  EXPECT_NE(mixed.Validate().message().find("layers[1].kind"), std::string::npos)
      << mixed.Validate().message();

  ModelSpec shaped = Generic();
  shaped.hidden = 64;
  ASSERT_FALSE(shaped.Validate().ok());
  EXPECT_NE(shaped.Validate().message().find("hidden"), std::string::npos);

  std::string text = ModelSpecToYaml(Generic()) + "hidden: 64\n";
  StatusOr<ModelSpec> parsed = ParseModelSpec(text, "model.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("hidden"), std::string::npos)
      << parsed.status().message();
}

TEST(GenericModel, CheckNotGenericNamesTheModelAndTheHint) {
  EXPECT_TRUE(CheckNotGeneric(ModelSpec{}, "x", "y").ok());
  Status refused = CheckNotGeneric(Generic(), "it cannot run", "plan it instead");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            "model imported has generic layers (imported costs, no implementation), so it "
            "cannot run; plan it instead");
}

}  // namespace
}  // namespace trident
