// Always-on invariant checks.
//
//   TRIDENT_CHECK(stage < num_stages) << "stage " << stage << " of " << num_stages;
//
// A failed check is a bug or a broken distributed step, never bad user input (that is a
// Status). It prints "host rank R: CHECK failed at file:line: condition: message" to stderr
// and aborts the process; under mpirun the abort ends the whole job. Checks are compiled in
// every build type.
#pragma once

#include <sstream>

namespace trident {

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
