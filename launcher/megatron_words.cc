// The text side of `trident import megatron`: shell words and Megatron-LM's pipeline layout
// grammar (E embedding, t transformer layer, L loss, '|' between stages, 'x*n' and '(...)*n'
// repeats, ',' ignored).
#include <cctype>
#include <map>
#include <string>

#include "launcher/megatron_import.h"

namespace trident {
namespace {

// The word at `text[i]` (a quote, a backslash escape or a plain character), appended to
// `word`; returns the index after it.
size_t TakeQuoted(std::string_view text, size_t i, std::string* word) {
  const char quote = text[i];
  for (++i; i < text.size() && text[i] != quote; ++i) {
    if (quote == '"' && text[i] == '\\' && i + 1 < text.size()) ++i;
    *word += text[i];
  }
  return i + 1;
}

bool Separates(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == ';';
}

// `group` repeated `count` times, from the digits at layout[*i] on.
StatusOr<int> RepeatCount(std::string_view layout, size_t* i) {
  if (*i >= layout.size() || layout[*i] != '*') return 1;
  size_t end = ++*i;
  while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
  if (end == *i) return InvalidArgument("'*' must be followed by a count");
  const int count = std::stoi(std::string(layout.substr(*i, end - *i)));
  *i = end;
  return count;
}

StatusOr<std::string> Expand(std::string_view layout, size_t* i, bool nested) {
  std::string out;
  while (*i < layout.size()) {
    const char c = layout[*i];
    if (c == ')') {
      if (!nested) return InvalidArgument("unbalanced ')'");
      return out;
    }
    std::string unit;
    if (c == '(') {
      ++*i;
      TRIDENT_ASSIGN_OR_RETURN(unit, Expand(layout, i, true));
      if (*i >= layout.size()) return InvalidArgument("unbalanced '('");
      ++*i;  // ')'
    } else if (c == 'E' || c == 't' || c == 'L' || c == '|') {
      unit = std::string(1, c);
      ++*i;
    } else if (c == ',') {
      ++*i;
      continue;
    } else {
      return InvalidArgument(std::string("'") + c +
                             "' is not one of E (embedding), t (transformer layer), L (loss), "
                             "'|', '*', '(', ')' or ','");
    }
    TRIDENT_ASSIGN_OR_RETURN(int count, RepeatCount(layout, i));
    for (int k = 0; k < count; ++k) out += unit;
  }
  if (nested) return InvalidArgument("unbalanced '('");
  return out;
}

}  // namespace

std::vector<std::string> ShellWords(std::string_view text, std::vector<int>* commands) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  int command = 0;
  std::vector<bool> arrays;  // the open parentheses: an array's (NAME=( ... )) or a command's
  auto end_word = [&] {
    if (in_word) {
      words.push_back(std::move(word));
      if (commands) commands->push_back(command);
    }
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      i += 2;
    } else if (c == '\'' || c == '"') {
      i = TakeQuoted(text, i, &word);
      in_word = true;
    } else if (Separates(c)) {
      const bool array = c == '(' && in_word && !word.empty() && word.back() == '=';
      end_word();
      if (c == '(') arrays.push_back(array);
      if (c == ')' && !arrays.empty()) arrays.pop_back();
      // A newline inside an array continues it; every other separator but a blank ends a
      // command.
      const bool in_array = !arrays.empty() && arrays.back();
      if (c == '(' || c == ')' || c == ';' || (c == '\n' && !in_array)) ++command;
      ++i;
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  end_word();
  return words;
}

std::vector<std::string> SubstituteVariables(std::vector<std::string> words) {
  std::map<std::string, std::string> values;
  for (std::string& word : words) {
    for (const auto& [name, value] : values) {
      for (const std::string& ref : {"${" + name + "}", "$" + name}) {
        for (size_t at = word.find(ref); at != std::string::npos; at = word.find(ref, at)) {
          const size_t end = at + ref.size();
          const bool longer_name =
              ref[1] != '{' && end < word.size() &&
              (std::isalnum(static_cast<unsigned char>(word[end])) || word[end] == '_');
          if (longer_name) {
            at = end;
            continue;
          }
          word.replace(at, ref.size(), value);
          at += value.size();
        }
      }
    }
    const size_t eq = word.find('=');
    const bool assignment =
        eq != std::string::npos && eq > 0 && eq + 1 < word.size() &&
        (std::isalpha(static_cast<unsigned char>(word[0])) || word[0] == '_') &&
        word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
            eq;
    if (assignment) values[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return words;
}

StatusOr<std::vector<std::string>> ExpandPipelineLayout(std::string_view layout) {
  size_t i = 0;
  StatusOr<std::string> flat = Expand(layout, &i, false);
  if (!flat.ok()) {
    return InvalidArgument("--pipeline-model-parallel-layout '" + std::string(layout) +
                           "': " + flat.status().message());
  }
  std::vector<std::string> stages(1);
  for (char c : *flat) {
    if (c == '|') {
      stages.emplace_back();
    } else {
      stages.back() += c;
    }
  }
  return stages;
}

}  // namespace trident
