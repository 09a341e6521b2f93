#include "runtime/data/corpus.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/file_util.h"

namespace trident {
namespace fs = std::filesystem;

StatusOr<std::vector<std::string>> ListCorpusFiles(const std::string& dir) {
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) {
      return NotFound(dir + ": no such folder; hint: pass a text file or a folder of text files");
    }
    return IoError(dir + ": cannot list: " + error.message());
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : it) {
    if (entry.is_symlink(error) || !entry.is_regular_file(error)) continue;
    files.push_back(entry.path());
  }
  if (files.empty()) {
    return InvalidArgument(dir + ": holds no regular files to read as text");
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  std::vector<std::string> paths;
  for (const fs::path& file : files) paths.push_back(file.string());
  return paths;
}

StatusOr<std::vector<std::string>> DefaultCorpusFiles() {
  return ListCorpusFiles(kDefaultCorpusDir);
}

StatusOr<std::string> ReadCorpus(const std::vector<std::string>& paths) {
  if (paths.empty()) return InvalidArgument("no text files given");
  std::string text;
  for (const std::string& path : paths) {
    std::error_code error;
    if (fs::is_directory(path, error)) {
      return InvalidArgument(path + ": is a folder, not a text file; hint: pass the folder " +
                             "itself as the data path to read all its files");
    }
    StatusOr<std::string> contents = ReadFile(path);
    if (!contents.ok()) {
      if (contents.status().code() == StatusCode::kNotFound) {
        return NotFound(path + ": no such file; hint: check the data path");
      }
      return contents.status();
    }
    text += *contents;
  }
  return text;
}

StatusOr<std::unique_ptr<TextDataset>> OpenTextCorpus(const std::string& path,
                                                      const DataOptions& options) {
  std::string dir = path.empty() ? std::string(kDefaultCorpusDir) : path;
  std::error_code error;
  if (!path.empty() && !fs::is_directory(path, error)) return TextDataset::Open(path, options);
  TRIDENT_ASSIGN_OR_RETURN(std::vector<std::string> files, ListCorpusFiles(dir));
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadCorpus(files));
  std::string name = dir + " (" + std::to_string(files.size()) + " files)";
  return TextDataset::FromText(std::move(text), std::move(name), options);
}

}  // namespace trident
