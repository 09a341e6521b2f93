// Status and StatusOr: the value every fallible Trident function returns.
//
// A Status is ok, or carries a code and a message written for the user: what failed, the
// values involved and, where there is one, the fix. Nothing in Trident throws across a
// module boundary; third-party exceptions are converted where the library is called.
// Status is a plain value and is safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace trident {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad user input: a file, a key, a flag
  kNotFound,          // a file or an entry that does not exist
  kIoError,           // the environment failed: read, write, rename
  kInfeasible,        // a request no plan can satisfy
  kDeadlineExceeded,  // a wait (a message, a collective) ran past its timeout
  kFailedPrecondition,
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Returns a copy whose message is `prefix` + ": " + message (e.g. a file name).
  Status WithPrefix(std::string_view prefix) const;

  bool operator==(const Status&) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status IoError(std::string message) {
  return Status(StatusCode::kIoError, std::move(message));
}
inline Status Infeasible(std::string message) {
  return Status(StatusCode::kInfeasible, std::move(message));
}
inline Status DeadlineExceeded(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}
inline Status FailedPrecondition(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// StatusOr<T>: either a T or a non-ok Status.
// REQUIRES: value() only when ok(); constructing from an ok Status is a bug (checked).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status);                         // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

[[noreturn]] void DieOnOkStatusInStatusOr();

template <typename T>
StatusOr<T>::StatusOr(Status status) : status_(std::move(status)) {
  if (status_.ok()) DieOnOkStatusInStatusOr();
}

}  // namespace trident

#define TRIDENT_CONCAT_INNER_(a, b) a##b
#define TRIDENT_CONCAT_(a, b) TRIDENT_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function when it is not ok.
#define TRIDENT_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::trident::Status trident_status_ = (expr);        \
    if (!trident_status_.ok()) return trident_status_; \
  } while (false)

// `lhs = value of expr`, or returns its status from the enclosing function.
#define TRIDENT_ASSIGN_OR_RETURN(lhs, expr) \
  TRIDENT_ASSIGN_OR_RETURN_IMPL_(TRIDENT_CONCAT_(trident_statusor_, __LINE__), lhs, expr)
#define TRIDENT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
