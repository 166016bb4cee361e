// PLACESIM_CHECK: always-on assertion for program bugs (never for user input, which gets a
// Status). On failure it prints the condition with file:line and aborts.
// PLACESIM_DCHECK: the same in debug builds only, for hot paths.
#ifndef PLACESIM_BASE_CHECK_H_
#define PLACESIM_BASE_CHECK_H_

namespace placesim::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);
}  // namespace placesim::internal

#define PLACESIM_CHECK(cond)                                                   \
  do {                                                                         \
    if (!(cond)) ::placesim::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

#ifdef NDEBUG
#define PLACESIM_DCHECK(cond) \
  do {                        \
  } while (false && (cond))
#else
#define PLACESIM_DCHECK(cond) PLACESIM_CHECK(cond)
#endif

#endif  // PLACESIM_BASE_CHECK_H_
