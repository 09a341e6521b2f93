// Every file shipped in configs/ loads and validates.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/file_util.h"
#include "core/validate_file.h"

namespace trident {
namespace {

namespace fs = std::filesystem;

TEST(Configs, EveryFileLoads) {
  int loaded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(TRIDENT_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    StatusOr<FileSummary> summary = ValidateFile(entry.path().string());
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
    ++loaded;
  }
  EXPECT_GE(loaded, 12);  // 9 models and 3 clusters at least
}

// Every ```yaml example in core/README.md is a valid file of its kind.
TEST(Configs, FormatExamplesInCoreReadmeAreValid) {
  StatusOr<std::string> readme = ReadFile(TRIDENT_SOURCE_DIR "/core/README.md");
  ASSERT_TRUE(readme.ok()) << readme.status().ToString();
  fs::path dir = fs::path(TRIDENT_BINARY_DIR) / "readme_examples";
  fs::create_directories(dir);
  int examples = 0;
  for (size_t at = readme->find("```yaml\n"); at != std::string::npos;
       at = readme->find("```yaml\n", at + 1)) {
    size_t begin = at + 8;
    size_t end = readme->find("```", begin);
    ASSERT_NE(end, std::string::npos);
    std::string path = (dir / ("example" + std::to_string(examples++) + ".yaml")).string();
    ASSERT_TRUE(WriteFileAtomic(path, readme->substr(begin, end - begin)).ok());
    StatusOr<FileSummary> summary = ValidateFile(path);
    EXPECT_TRUE(summary.ok()) << "core/README.md example " << examples << ": "
                              << summary.status().ToString();
  }
  EXPECT_EQ(examples, 5);
}

}  // namespace
}  // namespace trident
