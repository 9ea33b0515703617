#pragma once
// The `lockstep` program of this build, which the process tests run as users do, and the test
// programs built beside it.

#include <string>
#include <vector>

#include "process.hpp"

namespace lockstep::testing {

/// Its path (LOCKSTEP_BINARY, which tests/CMakeLists.txt defines for the test program).
inline const std::string k_lockstep = LOCKSTEP_BINARY;

/// A program of two simulations through cli::main (tests/tools/two_simulations_main.cpp).
inline const std::string k_two_simulations = TWO_SIMULATIONS_BINARY;

/// Runs it with `args` and returns what it printed.
inline ProcessResult lockstep_cli(const std::vector<std::string>& args) { return run_process(k_lockstep, args); }

}  // namespace lockstep::testing
