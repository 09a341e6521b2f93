#include "core/check.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace trident {
namespace {

// The innermost ScopedCheckContext of this thread, or nullptr.
thread_local const ScopedCheckContext* innermost_context = nullptr;

std::string FailurePrefix() {
  if (innermost_context != nullptr) return innermost_context->context().Prefix();
  return LogContext::FromEnvironment().Prefix();
}

}  // namespace

ScopedCheckContext::ScopedCheckContext(LogContext context)
    : context_(std::move(context)), enclosing_(innermost_context) {
  innermost_context = this;
}

ScopedCheckContext::~ScopedCheckContext() { innermost_context = enclosing_; }

CheckFailure::CheckFailure(const char* file, int line, const char* condition)
    : file_(file), line_(line), condition_(condition) {}

CheckFailure::~CheckFailure() {
  std::string text = FailurePrefix() + ": CHECK failed at " + file_ + ":" + std::to_string(line_) +
                     ": " + condition_;
  std::string detail = stream_.str();
  if (!detail.empty()) text += ": " + detail;
  text += '\n';
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace trident
