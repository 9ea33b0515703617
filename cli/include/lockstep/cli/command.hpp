#pragma once
/// What every command of a lockstep command line shares: the exit codes, the error a command
/// throws to leave with one line on stderr, and the parsing that turns CLI11's outcomes into
/// those lines and codes. `cli::main` (cli.hpp) uses them; a program that adds commands of its
/// own (through its simulation's hooks) uses them too.

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace lockstep::cli {

/// Exit codes shared by every command.
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_failed = 1;      ///< the simulation failed (desync, non-finite state)
inline constexpr int k_exit_usage = 2;       ///< bad arguments or bad input files
inline constexpr int k_exit_network = 3;     ///< host, join, spectate: the network failed
inline constexpr int k_exit_unverified = 4;  ///< `replay`: played, but no recorded hash in the range

/// Thrown by a command to leave with `error: <message>` on stderr and exit code 2 (or `code`).
struct CommandError {
  std::string message;
  int code = k_exit_usage;
};

/// Parses the command line into `app` and runs the chosen command's callback. Returns the exit
/// code: `exit_code` as the callback left it, 0 for --help and --version, 2 with a one-line
/// `error:` for bad arguments or an unknown command, a CommandError's code with its message, 1
/// for any other exception. A bare program name prints the usage and exits 2.
int run_app(CLI::App& app, int argc, char** argv, const int& exit_code);

/// Runs `f` and returns its exit code; what it throws is printed as a command's is (`error: …`,
/// one line, on stderr) and becomes the exit code: a CommandError's code, 1 for anything else.
int run_guarded(const std::function<int()>& f);

}  // namespace lockstep::cli
