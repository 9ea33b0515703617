#include "lockstep/engine/version.hpp"

namespace lockstep {

const char* engine_version() { return LOCKSTEP_VERSION; }

std::string build_description() {
#if defined(__clang__)
  std::string compiler = "clang++ " __clang_version__;
#elif defined(__GNUC__)
  std::string compiler = "g++ " __VERSION__;
#else
  std::string compiler = "unknown compiler";
#endif
  std::string flags = LOCKSTEP_BUILD_FLAGS;
  const std::size_t first = flags.find_first_not_of(' ');
  flags = first == std::string::npos ? "" : flags.substr(first);
  return compiler + ", " + LOCKSTEP_BUILD_TYPE + (flags.empty() ? "" : ", " + flags);
}

}  // namespace lockstep
