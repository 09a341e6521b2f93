#include "launcher/hostfile.h"

#include <charconv>
#include <map>

#include "core/file_util.h"

namespace trident {
namespace {

// Most slots one host may offer; far above any real node, low enough that sums fit an int.
constexpr int kMaxSlots = 1 << 20;

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// "" when `name` is a usable host name, else why not.
std::string HostNameProblem(std::string_view name) {
  if (name.empty()) return "an empty host name";
  for (char c : name) {
    if (!IsHostChar(c)) {
      return "host name '" + std::string(name) + "' has the character '" + std::string(1, c) +
             "' (use letters, digits, '.', '-', '_')";
    }
  }
  return "";
}

// Parses a positive slot count; "" when ok, else why not.
std::string ParseSlots(std::string_view text, int* slots) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > kMaxSlots) {
    return "slot count '" + std::string(text) + "' is not a whole number from 1 to " +
           std::to_string(kMaxSlots);
  }
  *slots = value;
  return "";
}

std::vector<std::string_view> SplitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

// One non-blank hostfile line (comment removed) into `host`; "" when ok, else why not.
std::string ParseHostLine(std::string_view line, HostSlots* host) {
  std::vector<std::string_view> words = SplitWords(line);
  host->name = std::string(words[0]);
  if (std::string problem = HostNameProblem(words[0]); !problem.empty()) return problem;
  bool have_slots = false;
  int max_slots = 0;
  for (size_t i = 1; i < words.size(); ++i) {
    std::string_view word = words[i];
    size_t eq = word.find('=');
    std::string_view key = word.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : word.substr(eq + 1);
    std::string problem;
    if (key == "slots") {
      problem = ParseSlots(value, &host->slots);
      have_slots = true;
    } else if (key == "max_slots" || key == "max-slots") {
      problem = ParseSlots(value, &max_slots);
    } else {
      problem = "unknown entry '" + std::string(word) + "' (expected slots=N or max_slots=N)";
    }
    if (!problem.empty()) return problem;
  }
  if (!have_slots) {
    return "host '" + host->name + "' has no slots=N; write how many ranks it may run, e.g. '" +
           host->name + " slots=8'";
  }
  if (max_slots != 0 && max_slots < host->slots) {
    return "max_slots=" + std::to_string(max_slots) +
           " is below slots=" + std::to_string(host->slots);
  }
  return "";
}

}  // namespace

StatusOr<std::vector<HostSlots>> ParseHostfile(std::string_view text, const std::string& file) {
  std::vector<HostSlots> hosts;
  std::map<std::string, int> line_of_host;
  int line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    line = line.substr(0, line.find('#'));
    if (SplitWords(line).empty()) continue;
    std::string where = file + ":" + std::to_string(line_number) + ": ";
    HostSlots host;
    if (std::string problem = ParseHostLine(line, &host); !problem.empty()) {
      return InvalidArgument(where + problem);
    }
    auto [it, inserted] = line_of_host.emplace(host.name, line_number);
    if (!inserted) {
      return InvalidArgument(where + "host '" + host.name + "' is already listed on line " +
                             std::to_string(it->second) +
                             "; list each host once with all its slots");
    }
    hosts.push_back(host);
  }
  if (hosts.empty()) {
    return InvalidArgument(file + ": lists no hosts; write one 'HOST slots=N' line per host");
  }
  return hosts;
}

StatusOr<std::vector<HostSlots>> LoadHostfile(const std::string& path) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseHostfile(text, path);
}

StatusOr<std::vector<HostSlots>> ParseHostList(std::string_view list) {
  std::vector<HostSlots> hosts;
  std::map<std::string, bool> seen;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string_view::npos) end = list.size();
    std::string_view entry = list.substr(pos, end - pos);
    pos = end + 1;
    std::string where = "--hosts '" + std::string(list) + "': ";
    size_t colon = entry.find(':');
    HostSlots host{std::string(entry.substr(0, colon)), 1};
    std::string problem = HostNameProblem(host.name);
    if (problem.empty() && colon != std::string_view::npos) {
      problem = ParseSlots(entry.substr(colon + 1), &host.slots);
    }
    if (!problem.empty()) return InvalidArgument(where + problem + "; write e.g. a:8,b:8");
    if (!seen.emplace(host.name, true).second) {
      return InvalidArgument(where + "host '" + host.name + "' is listed twice");
    }
    hosts.push_back(host);
  }
  return hosts;
}

std::string HostsToString(const std::vector<HostSlots>& hosts) {
  std::string text;
  for (const HostSlots& host : hosts) {
    if (!text.empty()) text += ", ";
    text += host.name + ":" + std::to_string(host.slots);
  }
  return text;
}

}  // namespace trident
