// Status and StatusOr<T>: errors as values for everything that can fail on user input.
//
// A Status is OK or carries a code and a human-readable message. Messages for bad input name
// the field path, the value, the rule and what is allowed (see ErrorList in errors.h).
// StatusOr<T> holds either a T or a non-OK Status. Neither throws.
//
// Thread-safety: plain values; safe to copy across threads.
#ifndef PLACESIM_BASE_STATUS_H_
#define PLACESIM_BASE_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/check.h"

namespace placesim {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad user input: scenario, flag, override; CLI exit code 2
  kNotFound,            // a named thing (preset, file, field) does not exist; exit code 2
  kOutOfRange,          // a value outside what placesim can represent or will simulate
  kFailedPrecondition,  // a correct request that the current state cannot serve
  kInternal,            // a bug in placesim
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok()
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(runtime/explicit)
    PLACESIM_CHECK(!status_.ok());
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT(runtime/explicit)

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok()
  const T& value() const& {
    PLACESIM_CHECK(ok());
    return *value_;
  }
  T& value() & {
    PLACESIM_CHECK(ok());
    return *value_;
  }
  T&& value() && {
    PLACESIM_CHECK(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace placesim

#define PLACESIM_STATUS_CONCAT_INNER_(a, b) a##b
#define PLACESIM_STATUS_CONCAT_(a, b) PLACESIM_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::placesim::Status placesim_status_ = (expr);        \
    if (!placesim_status_.ok()) return placesim_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F())`: declares x from a StatusOr, or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(PLACESIM_STATUS_CONCAT_(placesim_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#endif  // PLACESIM_BASE_STATUS_H_
