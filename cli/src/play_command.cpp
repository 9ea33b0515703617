#include "lockstep/cli/detail/play_flags.hpp"

#include <cstdio>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::cli::detail {

void add_play_options(CLI::App* cmd, PlayFlags& flags, const std::function<void()>& add_config) {
  cmd->add_option("--ticks", flags.ticks,
                  "End after this many ticks (default " + std::to_string(flags.ticks) + ": play until Ctrl-C)")
      ->check(whole_number(0, k_max_command_ticks));
  if (add_config) {
    flags.players_option = cmd->add_option("--players", flags.players, "Players: you, and bots for the rest")
                               ->check(whole_number(1, replay::k_max_replay_players));
    add_config();
  }
  cmd->add_option("--seed", flags.seed,
                  "Session seed (the initial state and the bots; default " + std::to_string(flags.seed) + ")")
      ->check(whole_number());
  cmd->add_option("--record", flags.record, "Record the session as an input-only replay file");
  cmd->add_option("--port", flags.port,
                  "TCP port to serve the page on (default " + std::to_string(flags.port) + "; 0: any free port)")
      ->check(whole_number(0, k_max_port));
  cmd->add_option("--listen", flags.listen, "Address to listen on (default " + flags.listen + ": this machine only)");
}

void require_listen_address(const std::string& listen) {
  if (!ViewServer::is_address(listen)) throw CommandError{"--listen '" + listen + "' is not an IPv4 or IPv6 address"};
}

void print_play_start(const std::string& url) {
  std::printf("play: you are player 0 (arrows or WASD, space for action), bots play the others; open %s in a "
              "browser: the session runs while a page is open (Ctrl-C stops)\n",
              url.c_str());
  std::fflush(stdout);
}

int print_play_end(const PlayFlags& flags, bool reached_limit, std::uint64_t written_tick, std::uint64_t tick,
                   std::uint64_t hash) {
  if (reached_limit) {
    std::fprintf(stderr, "note: the recording reached the %llu-byte limit of a replay file and ends, complete, at "
                 "tick %llu\n", static_cast<unsigned long long>(replay::k_max_file_bytes),
                 static_cast<unsigned long long>(written_tick));
  }
  if (!flags.record.empty()) std::printf("recorded %s\n", flags.record.c_str());
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(tick), hash_hex(hash).c_str());
  const int signal_number = stop_signal();
  return signal_number != 0 ? 128 + signal_number : k_exit_ok;
}

}  // namespace lockstep::cli::detail
