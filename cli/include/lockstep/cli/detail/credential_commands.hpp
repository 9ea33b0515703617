#pragma once
// `keygen` and `token`: a matchmaking backend's tools (net/PROTOCOL.md, "Connect tokens"). They
// depend on no simulation: compiled once, in src/credential_commands.cpp.

#include <CLI/CLI.hpp>

namespace lockstep::cli::detail {

/// Registers `keygen` and `token` on `app`.
void add_credential_commands(CLI::App& app, int* exit_code);

}  // namespace lockstep::cli::detail
