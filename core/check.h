// Always-on invariant checks.
//
//   TRIDENT_CHECK(stage < num_stages) << "stage " << stage << " of " << num_stages;
//
// A failed check is a bug or a broken distributed step, never bad user input (that is a
// Status). It prints "PREFIX: CHECK failed at file:line: condition: message" to stderr and
// aborts the process; under mpirun the abort ends the whole job. PREFIX is the innermost
// ScopedCheckContext's "host rank R (dp, pp, tp)" on the failing thread, else the host and the
// launcher's rank (LogContext::FromEnvironment). Checks are compiled in every build type.
#pragma once

#include <sstream>

#include "core/logging.h"

namespace trident {

// Says who is speaking when a check fails: while one lives, failed checks on the thread that
// created it print its context. A rank's worker creates one from the rank map around the
// rank's work. A failed check has no caller to return a context to, so the context is found
// through the thread instead of passed: it is fixed for the object's life, seen only by its
// thread, and two ranks run as threads of one process each report their own.
// REQUIRES: destroyed on the creating thread, innermost first (a scoped local).
class ScopedCheckContext {
 public:
  explicit ScopedCheckContext(LogContext context);
  ~ScopedCheckContext();
  ScopedCheckContext(const ScopedCheckContext&) = delete;
  ScopedCheckContext& operator=(const ScopedCheckContext&) = delete;

  const LogContext& context() const { return context_; }

 private:
  LogContext context_;
  const ScopedCheckContext* enclosing_;
};

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;

  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream stream_;
};

}  // namespace trident

#define TRIDENT_CHECK(condition) \
  if (condition) {               \
  } else                         \
    ::trident::CheckFailure(__FILE__, __LINE__, #condition).stream()

#define TRIDENT_CHECK_EQ(a, b) TRIDENT_CHECK((a) == (b)) << (a) << " != " << (b) << " "
