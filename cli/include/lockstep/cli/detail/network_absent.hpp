#pragma once
// The network commands in a build made without the network (LOCKSTEP_NETWORK=OFF, as the
// WebAssembly build is): `host`, `join`, `spectate`, `keygen` and `token` are there, with their
// descriptions, and end with one error line saying why. Compiled in src/network_absent.cpp.

#include <CLI/CLI.hpp>

namespace lockstep::cli::detail {

/// Registers the network's commands on `app`, each failing at once whatever follows it.
void add_absent_network_commands(CLI::App& app);

}  // namespace lockstep::cli::detail
