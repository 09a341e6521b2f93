#include "runtime/comm/comm.h"

#include <cstdlib>
#include <string>

#include "core/logging.h"

namespace trident {

Request& Request::operator=(Request&& other) noexcept {
  owner_ = other.owner_;
  id_ = other.id_;
  other.owner_ = nullptr;
  other.id_ = 0;
  return *this;
}

std::string Wire::CountText() const { return std::to_string(count) + Unit(); }

void Comm::FailJob(const Status& reason) {
  Logger(LogContext::FromEnvironment()).Error(reason.message());
  AbortJob(1);
  std::_Exit(1);  // not reached: GCC does not carry [[noreturn]] through a virtual call
}

bool IsCommTimeout(const Status& status) { return status.code() == StatusCode::kDeadlineExceeded; }

}  // namespace trident
