#include "base/status.h"

#include <cstdio>
#include <cstdlib>

namespace placesim {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

namespace internal {
void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "placesim: internal error: check failed: %s at %s:%d\n", condition, file,
               line);
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

}  // namespace placesim
