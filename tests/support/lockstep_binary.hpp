#pragma once
// The `lockstep` program of this build, which the process tests run as users do.

#include <string>
#include <vector>

#include "process.hpp"

namespace lockstep::testing {

/// Its path (LOCKSTEP_BINARY, which tests/CMakeLists.txt defines for the test program).
inline const std::string k_lockstep = LOCKSTEP_BINARY;

/// Runs it with `args` and returns what it printed.
inline ProcessResult lockstep_cli(const std::vector<std::string>& args) { return run_process(k_lockstep, args); }

}  // namespace lockstep::testing
