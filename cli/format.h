// JSON text for command output (numbers and aligned tables: core/text_format.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/text_format.h"

namespace trident {

// JSON text for --json output, indented by 2. Strings that are not valid UTF-8 (a name
// copied from a Latin-1 file) have their bad bytes replaced, never abort the command.
std::string JsonText(const nlohmann::json& value);

// Prints "error: MESSAGE" on stderr and returns 1, a command's exit status for a failure.
int PrintError(const Status& status);

}  // namespace trident
