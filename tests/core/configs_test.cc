// Every file shipped in configs/ loads and validates.
#include <gtest/gtest.h>

#include <filesystem>

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
  EXPECT_GE(loaded, 11);  // 8 models and 3 clusters at least
}

}  // namespace
}  // namespace trident
