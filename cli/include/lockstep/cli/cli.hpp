#pragma once
/// A whole command line for your simulation in one call:
///
/// ```
/// #include <lockstep/cli/cli.hpp>
/// int main(int argc, char** argv) { return lockstep::cli::main<MySim>(argc, argv); }
/// ```
///
/// gives `run`, `replay`, `info`, `diff`, `regress`, `export`, `view`, `play` (for a simulation
/// whose hooks map keys to an input), `host`, `join` and `spectate`, with
/// the options, output lines and exit codes of the `lockstep` program (which is
/// `cli::main<World>`). What a simulation adds (configuration options, bots, descriptions, commands
/// of its own) comes through `cli::Hooks<S>` (hooks.hpp); none is required.
///
/// Several simulations in one program: `cli::main<SimA, SimB>(argc, argv)`. Commands that read a
/// file use the simulation the file names; `run`, `host`, `join` and `spectate` take
/// `--sim NAME` (a simulation's `k_name`; default the first).

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/export_command.hpp"
// LOCKSTEP_NETWORK is 0 in a build without the network (lockstep::cli says so to its users).
#ifndef LOCKSTEP_NETWORK
#define LOCKSTEP_NETWORK 1
#endif
#if LOCKSTEP_NETWORK
#include "lockstep/cli/detail/credential_commands.hpp"
#include "lockstep/cli/detail/net_commands.hpp"
#else
#include "lockstep/cli/detail/network_absent.hpp"
#endif
#include "lockstep/cli/detail/play_command.hpp"
#include "lockstep/cli/detail/regress_command.hpp"
#include "lockstep/cli/detail/replay_commands.hpp"
#include "lockstep/cli/detail/run_command.hpp"
#include "lockstep/cli/detail/simulations.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/view/view_command.hpp"
// The built-in world's hooks are visible wherever cli::main is, so that Hooks<World> means the
// same in every program that names World.
#include "lockstep/cli/world_hooks.hpp"
#include "lockstep/engine/version.hpp"

namespace lockstep::cli {

/// Runs the command line `argv` names and returns the process's exit code: 0 done, 1 the
/// simulation failed (desync, non-finite state), 2 bad arguments or bad input, 3 the network
/// failed, 4 a replay played with no hash to check, 128 + N stopped by signal N.
template <Simulation... Sims>
int main(int argc, char** argv, const std::string& program = {}) {
  using Known = detail::Simulations<Sims...>;
  static_assert(Known::names_are_distinct(), "two simulations of one command line share a k_name");
  const std::string name =
      !program.empty() ? program : argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "lockstep";
  CLI::App app{name + " — deterministic fixed-step simulation, bit-exact replays and networked lockstep (" +
               Known::names() + ").\nRun `" + name + " <command> --help` for the options of a command."};
  app.name(name);
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every command");
  const std::string version = std::string(engine_version());
  app.set_version_flag("--version", name == "lockstep" ? "lockstep " + version : name + " (lockstep " + version + ")",
                       "Print the version and exit");
  int exit_code = k_exit_ok;

  // Commands that start a session build the --sim simulation (read before parsing, so that only
  // its options are registered); commands that read a file follow the file.
  const std::string chosen = detail::sim_argument(argc, argv);
  auto for_chosen = [&chosen](auto&& add) {
    Known::with(chosen, [&]<class S>() { add.template operator()<S>(); });
  };
  CLI::App* run = app.add_subcommand("run", "Run a headless session of bots and print the final state hash");
  detail::add_sim_option<Known>(run);
  for_chosen([&]<class S>() { detail::add_run_command<S>(run, &exit_code); });
  detail::add_replay_commands<Known>(app, &exit_code);
  detail::add_regress_commands<Known>(app, &exit_code);
  detail::add_export_command<Known>(app, &exit_code);
  detail::add_view_command<Known>(app, &exit_code);
  // `play` for the simulations whose hooks map keys to an input.
  if constexpr ((detail::HasKeys<Sims> || ...)) {
    CLI::App* play = app.add_subcommand("play", "Play a local session from the browser with the keyboard, bots in the "
                                                "other slots, and record it");
    detail::add_sim_option<Known>(play);
    for_chosen([&]<class S>() {
      if constexpr (detail::HasKeys<S>) {
        detail::add_play_command<S>(play, &exit_code);
      } else {
        play->allow_extras();  // whatever options follow, say why there is no play
        play->callback([] {
          throw CommandError{"simulation '" + std::string(S::k_name) +
                             "' maps no keys to an input (Hooks<S>::input_from_keys): it cannot be played"};
        });
      }
    });
  }
#if LOCKSTEP_NETWORK
  CLI::App* host = app.add_subcommand("host", "Host a networked lockstep session over UDP");
  CLI::App* join = app.add_subcommand("join", "Join a session as a player");
  CLI::App* spectate = app.add_subcommand("spectate", "Watch a session: receive the inputs and step with them");
  for (CLI::App* command : {host, join, spectate}) detail::add_sim_option<Known>(command);
  for_chosen([&]<class S>() {
    detail::add_host_command<S>(host, &exit_code);
    detail::add_join_command<S>(join, net::Role::player, &exit_code);
    detail::add_join_command<S>(spectate, net::Role::spectator, &exit_code);
  });
  detail::add_credential_commands(app, &exit_code);
#else
  detail::add_absent_network_commands(app);
#endif
  (detail::add_commands<Sims>(app, &exit_code), ...);
  return run_app(app, argc, argv, exit_code);
}

}  // namespace lockstep::cli
