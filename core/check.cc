#include "core/check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/logging.h"

namespace trident {

CheckFailure::CheckFailure(const char* file, int line, const char* condition)
    : file_(file), line_(line), condition_(condition) {}

CheckFailure::~CheckFailure() {
  std::string text = LogContext::FromEnvironment().Prefix() + ": CHECK failed at " + file_ + ":" +
                     std::to_string(line_) + ": " + condition_;
  std::string detail = stream_.str();
  if (!detail.empty()) text += ": " + detail;
  text += '\n';
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace trident
