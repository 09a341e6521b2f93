#include "core/status.h"

#include <cstdio>
#include <cstdlib>

namespace trident {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kIoError:
      return "i/o error";
    case StatusCode::kInfeasible:
      return "infeasible";
    case StatusCode::kDeadlineExceeded:
      return "deadline exceeded";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return message_;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_);
}

void DieOnOkStatusInStatusOr() {
  std::fputs("trident: internal error: StatusOr constructed from an ok Status\n", stderr);
  std::abort();
}

}  // namespace trident
