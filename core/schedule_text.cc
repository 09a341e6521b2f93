// The text form of a schedule: one line per pipeline position, tokens like "1F3".
#include "core/schedule.h"

#include <cctype>
#include <cstdint>

namespace trident {
namespace {

constexpr int kMaxDigits = 9;  // keeps every number below 2^31

std::string Str(int64_t value) { return std::to_string(value); }

// Reads a run of decimal digits at `*pos`; false when there is none or it is too long.
bool ReadNumber(std::string_view token, size_t* pos, int* value) {
  size_t start = *pos;
  int64_t result = 0;
  while (*pos < token.size() && std::isdigit(static_cast<unsigned char>(token[*pos]))) {
    if (*pos - start < kMaxDigits) result = result * 10 + (token[*pos] - '0');
    ++*pos;
  }
  size_t digits = *pos - start;
  if (digits == 0 || digits > kMaxDigits) return false;
  *value = static_cast<int>(result);
  return true;
}

bool KindFromLetter(char letter, ActionKind* kind) {
  switch (letter) {
    case 'F':
      *kind = ActionKind::kForward;
      return true;
    case 'B':
      *kind = ActionKind::kBackward;
      return true;
    case 'W':
      *kind = ActionKind::kWeight;
      return true;
    default:
      return false;
  }
}

bool ParseAction(std::string_view token, Action* action) {
  size_t pos = 0;
  if (!ReadNumber(token, &pos, &action->stage)) return false;
  if (pos >= token.size() || !KindFromLetter(token[pos], &action->kind)) return false;
  ++pos;
  return ReadNumber(token, &pos, &action->micro_batch) && pos == token.size();
}

std::vector<std::string_view> SplitWhitespace(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

// Parses one line (comment already removed) into `actions`.
Status ParseLine(std::string_view line, const std::string& where, std::vector<Action>* actions) {
  for (std::string_view token : SplitWhitespace(line)) {
    Action action;
    if (!ParseAction(token, &action)) {
      return InvalidArgument(where + ": bad action '" + std::string(token) +
                             "': expected {stage}{F|B|W}{micro_batch}, e.g. 1F3");
    }
    actions->push_back(action);
  }
  return Status::Ok();
}

}  // namespace

char ActionKindLetter(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return 'F';
    case ActionKind::kBackward:
      return 'B';
    case ActionKind::kWeight:
      return 'W';
  }
  return '?';
}

std::string ActionToString(const Action& action) {
  return Str(action.stage) + ActionKindLetter(action.kind) + Str(action.micro_batch);
}

std::string ScheduleToText(const Schedule& schedule) {
  std::string text = "# " + schedule.ToString() + "\n";
  for (const std::vector<Action>& actions : schedule.positions) {
    std::string line;
    for (const Action& action : actions) {
      line += (line.empty() ? "" : " ") + ActionToString(action);
    }
    text += line + "\n";
  }
  return text;
}

StatusOr<Schedule> ParseScheduleText(std::string_view text, const std::string& source,
                                     ScheduleKind kind, int pp, int virtual_stages,
                                     int num_micro_batches, bool split_backward) {
  Schedule schedule{kind, pp, virtual_stages, num_micro_batches, split_backward, {}};
  int line_number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    line = line.substr(0, line.find('#'));
    std::vector<Action> actions;
    TRIDENT_RETURN_IF_ERROR(ParseLine(line, source + ":" + Str(line_number), &actions));
    if (!actions.empty()) schedule.positions.push_back(std::move(actions));
  }
  if (Status status = ValidateSchedule(schedule); !status.ok()) {
    return status.WithPrefix(source);
  }
  return schedule;
}

}  // namespace trident
