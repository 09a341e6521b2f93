#include "runtime/comm/comm.h"

namespace trident {

Request& Request::operator=(Request&& other) noexcept {
  owner_ = other.owner_;
  id_ = other.id_;
  other.owner_ = nullptr;
  other.id_ = 0;
  return *this;
}

bool IsCommTimeout(const Status& status) { return status.code() == StatusCode::kDeadlineExceeded; }

}  // namespace trident
