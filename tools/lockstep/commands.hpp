#pragma once
// The subcommands of the `lockstep` binary. Each `add_*` registers its options on the CLI11 app
// and returns the exit code holder that its callback fills in.

#include <CLI/CLI.hpp>

namespace lockstep::tools {

/// Exit codes shared by every subcommand.
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_failed = 1;    ///< the simulation failed (desync, non-finite state)
inline constexpr int k_exit_usage = 2;     ///< bad arguments or bad input files
inline constexpr int k_exit_unverified = 4;  ///< `replay`: played, but no recorded hash in the range

/// Registers `run`; `*exit_code` is set when it runs.
void add_run_command(CLI::App& app, int* exit_code);

/// Registers `lab ball` and `lab energy`.
void add_lab_commands(CLI::App& app, int* exit_code);

/// Registers `replay`, `info`, `diff` and `regress`.
void add_replay_commands(CLI::App& app, int* exit_code);

/// Registers `host`, `join` and `spectate`.
void add_net_commands(CLI::App& app, int* exit_code);

/// Thrown by a command to leave with `error: <message>` on stderr and exit code 2 (or `code`).
struct CommandError {
  std::string message;
  int code = k_exit_usage;
};

}  // namespace lockstep::tools
