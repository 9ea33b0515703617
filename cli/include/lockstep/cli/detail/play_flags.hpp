#pragma once
// `play`'s options that do not depend on the simulation, their registration, and the lines it
// prints: compiled once in the cli library (src/play_command.cpp).

#include <cstdint>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "lockstep/cli/view/view_server.hpp"

namespace lockstep::cli::detail {

/// `play`'s own options; the simulation's configuration options come beside them (PlayOptions<S>).
struct PlayFlags {
  std::uint64_t seed = 1;
  std::uint64_t ticks = 0;  ///< 0: until Ctrl-C
  std::uint32_t players = 0;
  CLI::Option* players_option = nullptr;
  std::string record;
  std::string listen = ViewServerConfig{}.listen_address;
  std::uint16_t port = k_default_view_port;
};

/// Registers `play`'s options on `cmd`, each with its default from `flags`; `add_config` (when
/// set) registers the simulation's configuration options after `--players`.
void add_play_options(CLI::App* cmd, PlayFlags& flags, const std::function<void()>& add_config);

/// Refuses a --listen that is not an address.
void require_listen_address(const std::string& listen);

/// What `play` says once the page is served: who plays what, and where.
void print_play_start(const std::string& url);

/// The last lines of `play`: the recording's limit when it was reached, where it went, and
/// `tick N hash H`; returns the exit code (128 + N after signal N).
int print_play_end(const PlayFlags& flags, bool reached_limit, std::uint64_t written_tick, std::uint64_t tick,
                   std::uint64_t hash);

}  // namespace lockstep::cli::detail
