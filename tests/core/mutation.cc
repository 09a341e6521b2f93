#include "tests/core/mutation.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace trident::testing {
namespace {

bool IsKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The end of the value starting at `at`: a flow collection's separator, a comment or the line.
size_t ValueEnd(std::string_view text, size_t at, bool in_flow) {
  size_t end = at;
  while (end < text.size() && text[end] != '\n') {
    if (in_flow && (text[end] == ',' || text[end] == '}' || text[end] == ']')) break;
    if (text[end] == '#' && end > at && text[end - 1] == ' ') break;
    ++end;
  }
  while (end > at && text[end - 1] == ' ') --end;
  return end;
}

size_t Uniform(std::mt19937_64& rng, size_t n) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

std::string JoinLines(const std::vector<std::string_view>& lines) {
  std::string text;
  for (std::string_view line : lines) (text += line) += '\n';
  return text;
}

// A nearby number: the value ± 1, doubled, halved, times 1000, negated or 0.
std::string NudgeNumber(std::string_view value, std::mt19937_64& rng) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) return "1";
  const int64_t nudged[] = {n + 1, n - 1, n * 2, n / 2, n * 1000, -n, 0};
  return std::to_string(nudged[Uniform(rng, std::size(nudged))]);
}

std::string ReplaceValue(std::string_view text, std::mt19937_64& rng) {
  std::vector<KeySpan> keys = FindKeys(text);
  std::erase_if(keys, [](const KeySpan& k) { return k.value_begin == k.value_end; });
  if (keys.empty()) return std::string(text);
  const KeySpan key = keys[Uniform(rng, keys.size())];
  std::string_view old = text.substr(key.value_begin, key.value_end - key.value_begin);
  const std::vector<std::string>& values = BoundaryValues();
  std::string value =
      Uniform(rng, 3) == 0 ? NudgeNumber(old, rng) : values[Uniform(rng, values.size())];
  return std::string(text.substr(0, key.value_begin)) + value +
         std::string(text.substr(key.value_end));
}

std::string DeleteKey(std::string_view text, std::mt19937_64& rng) {
  std::vector<KeySpan> keys = FindKeys(text);
  if (keys.empty()) return std::string(text);
  const KeySpan key = keys[Uniform(rng, keys.size())];
  size_t end = key.value_end;
  if (text.substr(end, 2) == ", ") end += 2;
  return std::string(text.substr(0, key.key_begin)) + std::string(text.substr(end));
}

std::string EditLines(std::string_view text, std::mt19937_64& rng) {
  std::vector<std::string_view> lines = Lines(text);
  if (lines.size() < 2) return std::string(text);
  const size_t a = Uniform(rng, lines.size()), b = Uniform(rng, lines.size());
  switch (Uniform(rng, 4)) {
    case 0:  // duplicate: a block key repeated in its mapping
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(a), lines[a]);
      break;
    case 1:
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(a));
      break;
    case 2:  // swap: list items reorder, keys move between sections
      std::swap(lines[a], lines[b]);
      break;
    default:  // a line moved under another indentation
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(b), lines[a]);
      break;
  }
  return JoinLines(lines);
}

std::string InsertUnknownKey(std::string_view text, std::mt19937_64& rng) {
  size_t brace = text.find('{', Uniform(rng, text.size()));
  if (brace != std::string_view::npos && Uniform(rng, 2) == 0) {
    return std::string(text.substr(0, brace + 1)) + "extra_key: 1, " +
           std::string(text.substr(brace + 1));
  }
  return std::string(text) + "extra_key: 1\n";
}

std::string AppendDocument(std::string_view text, std::mt19937_64& rng) {
  const std::string_view tails[] = {"", "name: second\n", "...\n", "- 1\n"};
  std::string_view tail = Uniform(rng, 5) == 0 ? text : tails[Uniform(rng, std::size(tails))];
  return std::string(text) + "---\n" + std::string(tail);
}

std::string OverwriteByte(std::string_view text, std::mt19937_64& rng) {
  if (text.empty()) return "";
  const char kMeta[] = {':',  '{', '}', '[', ']', ',', '-', '#', '\'', '"',  '\n',   ' ',
                        '\t', '&', '*', '!', '|', '>', '%', '@', '`',  '\0', '\xff', '?'};
  std::string mutant(text);
  mutant[Uniform(rng, mutant.size())] = kMeta[Uniform(rng, std::size(kMeta))];
  return mutant;
}

std::string MutateOnce(std::string_view text, std::mt19937_64& rng) {
  switch (Uniform(rng, 10)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return ReplaceValue(text, rng);
    case 4:
      return DeleteKey(text, rng);
    case 5:
      return EditLines(text, rng);
    case 6:
      return InsertUnknownKey(text, rng);
    case 7:
      return AppendDocument(text, rng);
    case 8:
      return std::string(text.substr(0, Uniform(rng, text.size() + 1)));
    default:
      return OverwriteByte(text, rng);
  }
}

}  // namespace

std::vector<KeySpan> FindKeys(std::string_view text) {
  std::vector<KeySpan> keys;
  int flow_depth = 0;
  bool in_comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') in_comment = false;
    if (in_comment) continue;
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) in_comment = true;
    if (c == '{' || c == '[') ++flow_depth;
    if ((c == '}' || c == ']') && flow_depth > 0) --flow_depth;
    if (c == '\n') flow_depth = std::min(flow_depth, 1);
    if (c != ':' || i == 0 || !IsKeyChar(text[i - 1])) continue;
    if (i + 1 < text.size() && text[i + 1] != ' ' && text[i + 1] != '\n') continue;
    size_t key_begin = i;
    while (key_begin > 0 && IsKeyChar(text[key_begin - 1])) --key_begin;
    size_t value_begin = i + 1;
    while (value_begin < text.size() && text[value_begin] == ' ') ++value_begin;
    bool nested =
        value_begin < text.size() && (text[value_begin] == '{' || text[value_begin] == '[');
    size_t value_end = nested ? value_begin : ValueEnd(text, value_begin, flow_depth > 0);
    keys.push_back({key_begin, value_begin, value_end});
  }
  return keys;
}

const std::vector<std::string>& BoundaryValues() {
  static const std::vector<std::string> kValues = {
      "0", "-1", "1", "2", "3", "5", "8", "64", "-9223372036854775808", "2147483647", "2147483648",
      "4294967295", "4294967296", "4294967360", "4611686018427387904", "9223372036854775807",
      "9223372036854775808", "99999999999999999999", "1e308", "-1e308", "1e-308", "4.9e-324",
      ".nan", ".NaN", ".inf", "-.inf", "0.5", "1.5", "-0.0", "1.0e+3", "0x10", "0o17", "1_000",
      "+7", "abc", "''", "\"\"", "~", "null", "[]", "{}", "[1, 2]", "{a: 1}", "true", "yes", "fp32",
      "gpt_block", "embedding", "lm_head", "1f1b", "interleaved_1f1b", "naive", "full", "rope",
      "rms_norm", "*alias", "&anchor 1", "!!str 5", "|", ">",
      // each limit of core/README.md, and one past it
      "1024", "1025", "16384", "16385", "65536", "65537", "100000", "100001", "262144", "262145",
      "1048576", "1048577", "4194304", "4194305", "16777216", "16777217", "8796093022208",
      "8796093022209", "1152921504606846976", "1152921504606846977"};
  return kValues;
}

std::string Mutate(std::string_view text, std::mt19937_64& rng) {
  // One edit in three mutants out of four, two or three edits in the rest.
  const size_t edits = Uniform(rng, 4) == 0 ? 2 + Uniform(rng, 2) : 1;
  std::string mutant(text);
  for (size_t i = 0; i < edits; ++i) mutant = MutateOnce(mutant, rng);
  return mutant;
}

}  // namespace trident::testing
