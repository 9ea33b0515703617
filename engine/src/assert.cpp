#include "lockstep/engine/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace lockstep {
namespace {

void abort_handler(const char* expression, const char* file, int line) {
  std::fprintf(stderr, "lockstep: assertion failed: %s (%s:%d)\n", expression, file, line);
  std::abort();
}

AssertHandler g_assert_handler = &abort_handler;

}  // namespace

AssertHandler set_assert_handler(AssertHandler handler) {
  AssertHandler previous = g_assert_handler;
  g_assert_handler = handler != nullptr ? handler : &abort_handler;
  return previous;
}

void assert_failed(const char* expression, const char* file, int line) {
  g_assert_handler(expression, file, line);
  std::abort();  // a handler that returns must not let the broken invariant continue
}

}  // namespace lockstep
