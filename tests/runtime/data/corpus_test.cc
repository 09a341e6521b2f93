#include "runtime/data/corpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/file_util.h"

namespace trident {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fresh folder under the build tree for one test.
fs::path TestDir(const std::string& name) {
  fs::path dir = fs::path(TRIDENT_BINARY_DIR) / "data_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const fs::path& path, const std::string& text) {
  ASSERT_TRUE(WriteFileAtomic(path.string(), text).ok()) << path;
}

TEST(CorpusTest, ListsRegularFilesByNameAndSkipsLinksAndFolders) {
  fs::path dir = TestDir("list");
  Write(dir / "b.txt", "bee");
  Write(dir / "a.txt", "ay");
  Write(dir / "C.txt", "sea");
  fs::create_symlink(dir / "a.txt", dir / "link.txt");
  fs::create_directory(dir / "sub");
  StatusOr<std::vector<std::string>> files = ListCorpusFiles(dir.string());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_THAT(*files, ElementsAre((dir / "C.txt").string(), (dir / "a.txt").string(),
                                  (dir / "b.txt").string()));
  StatusOr<std::string> text = ReadCorpus(*files);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "seaaybee");
}

TEST(CorpusTest, OpenTextCorpusReadsAFolderOrAFile) {
  fs::path dir = TestDir("open");
  Write(dir / "1", "abcdefgh");
  Write(dir / "2", "ijklmnop");
  StatusOr<std::unique_ptr<TextDataset>> folder = OpenTextCorpus(dir.string(), {4, 2, 0});
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ((*folder)->NumTokens(), 16);
  EXPECT_THAT((*folder)->Description(), HasSubstr("2 files"));
  StatusOr<std::unique_ptr<TextDataset>> file = OpenTextCorpus((dir / "2").string(), {4, 2, 0});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<Token> window(5);
  EXPECT_EQ((*file)->NumWindows(), 1);
  (*file)->ReadWindow(0, window);
  EXPECT_THAT(window, ElementsAre('i', 'j', 'k', 'l', 'm'));
}

TEST(CorpusTest, MissingFileIsNotFoundAndNamed) {
  StatusOr<std::unique_ptr<TextDataset>> data =
      TextDataset::Open("/nonexistent/corpus.txt", {8, 2, 0});
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(data.status().message(), HasSubstr("/nonexistent/corpus.txt: no such file"));
  EXPECT_EQ(ListCorpusFiles("/nonexistent").status().code(), StatusCode::kNotFound);
}

TEST(CorpusTest, FileTooShortNamesFileAndSizes) {
  fs::path dir = TestDir("short");
  Write(dir / "short.txt", "0123456789");
  StatusOr<std::unique_ptr<TextDataset>> data =
      TextDataset::Open((dir / "short.txt").string(), {64, 2, 0});
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("short.txt: 10 tokens"));
  EXPECT_THAT(data.status().message(), HasSubstr("65"));
}

TEST(CorpusTest, AFolderIsNotATextFile) {
  fs::path dir = TestDir("folder");
  StatusOr<std::string> text = ReadCorpus({dir.string()});
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("is a folder"));
  EXPECT_FALSE(ReadCorpus({}).ok());
  EXPECT_EQ(ListCorpusFiles(dir.string()).status().code(), StatusCode::kInvalidArgument);
}

TEST(CorpusTest, DefaultCorpusIsTheDebianLicenseTexts) {
  if (!fs::is_directory(kDefaultCorpusDir)) GTEST_SKIP() << kDefaultCorpusDir << " is missing";
  StatusOr<std::vector<std::string>> files = DefaultCorpusFiles();
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_TRUE(std::is_sorted(files->begin(), files->end()));
  for (const std::string& file : *files) EXPECT_FALSE(fs::is_symlink(file)) << file;
  StatusOr<std::unique_ptr<TextDataset>> data = OpenTextCorpus("", {128, 8, 0});
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_GT((*data)->NumTokens(), 100000);  // Debian 12 ships about 260 KB
  StatusOr<std::string> text = ReadCorpus(*files);
  ASSERT_TRUE(text.ok());
  std::vector<Token> window(129);
  (*data)->ReadWindow(3, window);
  for (size_t t = 0; t < window.size(); ++t) {
    EXPECT_EQ(window[t], static_cast<unsigned char>((*text)[3 * 128 + t]));
  }
}

}  // namespace
}  // namespace trident
