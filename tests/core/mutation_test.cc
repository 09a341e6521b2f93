// Seeded mutants of every shipped file: each loads without a crash, a hang or undefined
// behaviour (the sanitizer build runs this test), each rejection names the file and a
// line:column, and each accepted mutant keeps every constraint core/README.md documents
// (tests/core/constraints.h checks them apart from the loaders) and writes back to itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "tests/core/constraints.h"
#include "tests/core/mutation.h"

namespace trident {
namespace {

namespace fs = std::filesystem;

constexpr int kMutantsPerFile = 1000;
constexpr uint64_t kSeed = 19;

struct Tally {
  int accepted = 0;
  int rejected = 0;
};

// Every shipped model, cluster, profile, plan and published_runs file.
std::vector<std::string> ShippedFiles() {
  std::vector<std::string> files;
  for (const char* dir : {TRIDENT_SOURCE_DIR "/configs", TRIDENT_SOURCE_DIR "/tests/data/good"}) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// "FILE:LINE:COLUMN: " leads every error, except a top level that is no mapping at all.
bool Located(const std::string& message, const std::string& file) {
  if (message.rfind(file + ": expected a YAML mapping at the top level", 0) == 0) return true;
  if (message.rfind(file + ":", 0) != 0) return false;
  size_t at = file.size() + 1;
  for (int part = 0; part < 2; ++part) {
    size_t digits = at;
    while (digits < message.size() && std::isdigit(static_cast<unsigned char>(message[digits]))) {
      ++digits;
    }
    if (digits == at || digits >= message.size() || message[digits] != ':') return false;
    at = digits + 1;
  }
  return message.compare(at, 1, " ") == 0;
}

// Whether `text` holds more than one YAML document: a "---" line after content, or content
// after a "..." line.
bool HasSecondDocument(const std::string& text) {
  bool content = false, ended = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const bool start = line == "---" || line.rfind("--- ", 0) == 0;
    const bool end = line == "..." || line.rfind("... ", 0) == 0;
    const size_t first = line.find_first_not_of(" \t\r");
    const bool is_content = first != std::string::npos && line[first] != '#' && !end;
    if ((start && content) || (is_content && ended)) return true;
    ended = ended || (end && content);
    content = content || (is_content && !start);
  }
  return false;
}

// Loads `text` as a `T` through `parse` (the loader the CLI uses) and checks the outcome.
template <typename T>
void Check(const std::string& text, const std::string& file,
           StatusOr<T> (*parse)(std::string_view, const std::string&),
           std::string (*to_yaml)(const T&), Tally* tally) {
  StatusOr<T> value = parse(text, file);
  if (!value.ok()) {
    ++tally->rejected;
    EXPECT_TRUE(Located(value.status().message(), file))
        << value.status().message() << "\nmutant:\n"
        << text;
    return;
  }
  ++tally->accepted;
  EXPECT_FALSE(HasSecondDocument(text)) << "accepted a second document:\n" << text;
  std::string broken = testing::BrokenConstraint(*value);
  EXPECT_EQ(broken, "") << "accepted a mutant that breaks a documented constraint:\n" << text;
  StatusOr<T> again = parse(to_yaml(*value), file);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(*again == *value) << "does not write back to itself:\n" << text;
}

// The file's own rules (its runs' arguments are the launcher's to import).
StatusOr<PublishedRuns> ParsePublishedRunsFile(std::string_view text, const std::string& file) {
  return ParsePublishedRuns(text, file);
}

Tally MutateFile(const std::string& path) {
  StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return {};
  std::mt19937_64 rng(kSeed ^ std::hash<std::string>()(fs::path(path).filename().string()));
  const std::string kind = path.find("/models/") != std::string::npos      ? "model"
                           : path.find("/clusters/") != std::string::npos  ? "cluster"
                           : path.find("/published/") != std::string::npos ? "published_runs"
                           : path.find("profile") != std::string::npos     ? "profile"
                                                                           : "plan";
  Tally tally;
  for (int i = 0; i < kMutantsPerFile; ++i) {
    std::string mutant = testing::Mutate(*text, rng);
    const std::string name = "mutant.yaml";
    if (kind == "model") Check(mutant, name, ParseModelSpec, ModelSpecToYaml, &tally);
    if (kind == "cluster") Check(mutant, name, ParseClusterSpec, ClusterSpecToYaml, &tally);
    if (kind == "profile") Check(mutant, name, ParseProfile, ProfileToYaml, &tally);
    if (kind == "plan") Check(mutant, name, ParsePlan, PlanToYaml, &tally);
    if (kind == "published_runs") {
      Check(mutant, name, ParsePublishedRunsFile, PublishedRunsToYaml, &tally);
    }
    if (::testing::Test::HasFailure()) break;
  }
  return tally;
}

TEST(Mutation, EveryShippedFileSurvivesAThousandMutants) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> files = ShippedFiles();
  EXPECT_GE(files.size(), 14u);  // 9 models, 3 clusters, a profile and a plan at least
  int total = 0;
  for (const std::string& file : files) {
    Tally tally = MutateFile(file);
    total += tally.accepted + tally.rejected;
    std::printf("%-60s %4d accepted %4d rejected\n", fs::relative(file, TRIDENT_SOURCE_DIR).c_str(),
                tally.accepted, tally.rejected);
    // A mutator that never gets past the loader, or never trips it, tests nothing.
    EXPECT_GE(tally.accepted, kMutantsPerFile / 20) << file;
    EXPECT_GE(tally.rejected, kMutantsPerFile / 2) << file;
    if (HasFailure()) return;
  }
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  std::printf("%d mutants of %zu files in %.1f s\n", total, files.size(), seconds.count());
}

}  // namespace
}  // namespace trident
