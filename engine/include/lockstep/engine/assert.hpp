#pragma once
/// Programmer errors (the first tier of errors; expected failures are result.hpp's): `LOCKSTEP_ASSERT(condition)` calls a replaceable
/// handler that by default prints the failed condition and aborts. Never used for bad input:
/// bytes from outside get a Result.

namespace lockstep {

/// Called with the failed expression and its place; must not return normally into the caller
/// expecting the invariant to hold (the default aborts; a test handler may throw).
using AssertHandler = void (*)(const char* expression, const char* file, int line);

/// Replaces the handler; returns the previous one. Not thread-safe: set it at start-up.
AssertHandler set_assert_handler(AssertHandler handler);

/// Invokes the current handler.
void assert_failed(const char* expression, const char* file, int line);

}  // namespace lockstep

#define LOCKSTEP_ASSERT(condition)                                  \
  do {                                                              \
    if (!(condition)) {                                             \
      ::lockstep::assert_failed(#condition, __FILE__, __LINE__);    \
    }                                                               \
  } while (false)
