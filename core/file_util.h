// Whole-file reads and atomic writes.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace trident {

// Reads the whole file. NotFound when it does not exist, IoError otherwise.
StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to a temporary file beside `path`, flushes it to disk and renames it over
// `path`, so a reader (or a crash) never sees half a file. On failure `path` is unchanged and
// the temporary file is removed.
Status WriteFileAtomic(const std::string& path, std::string_view contents);

}  // namespace trident
