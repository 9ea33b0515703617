// Each limit pinned at its one definition, and every way into a World session — `run`, `play`,
// `host` and a golden file — taking the same number of players and refusing one more.

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep/cli/numbers.hpp"
#include "lockstep/engine/tick_limit.hpp"
#include "lockstep/engine/world_config.hpp"
#include "lockstep/net/wire.hpp"
#include "lockstep/replay/format.hpp"
#include "lockstep/replay/golden.hpp"
#include "lockstep_binary.hpp"
#include "ports.hpp"
#include "process.hpp"

using lockstep::testing::free_udp_port;
using lockstep::testing::k_lockstep;
using lockstep::testing::lockstep_cli;
using lockstep::testing::ProcessResult;
using lockstep::testing::RunningProcess;
using lockstep::testing::TempDir;

namespace {

/// `lockstep regress` on a folder holding one golden case of the arena with `players` players.
ProcessResult regress_arena_with(std::uint32_t players) {
  TempDir dir;
  std::ofstream(dir.file("players.golden")) << "scene arena\nplayers " << players << "\nticks 10\ninputs bots\n";
  return lockstep_cli({"regress", dir.path()});
}

}  // namespace

TEST_CASE("every limit has the value the formats, the wire and the documentation promise") {
  STATIC_REQUIRE(lockstep::k_max_world_players == 8);
  STATIC_REQUIRE(lockstep::net::k_max_session_players == 8);
  STATIC_REQUIRE(lockstep::replay::k_max_replay_players == 64);
  STATIC_REQUIRE(lockstep::k_tick_limit == std::uint64_t{1} << 40);
  STATIC_REQUIRE(lockstep::cli::k_max_command_ticks == 1'000'000'000);
  STATIC_REQUIRE(lockstep::replay::k_max_golden_ticks == 10'000'000);
  // What each one bounds holds what the next one hands it.
  STATIC_REQUIRE(lockstep::net::k_max_session_players >= lockstep::k_max_world_players);
  STATIC_REQUIRE(lockstep::replay::k_max_replay_players >= lockstep::net::k_max_session_players);
  STATIC_REQUIRE(lockstep::replay::k_max_golden_ticks <= lockstep::cli::k_max_command_ticks);
  STATIC_REQUIRE(lockstep::cli::k_max_command_ticks < lockstep::k_tick_limit);
}

TEST_CASE("run, play, host and golden files take 8 players and refuse a 9th, naming 1 to 8") {
  SECTION("run") {
    CHECK(lockstep_cli({"run", "--players", "8", "--ticks", "1"}).exit_code == 0);
    const ProcessResult nine = lockstep_cli({"run", "--players", "9", "--ticks", "1"});
    CHECK(nine.exit_code == 2);
    CHECK(nine.err == "error: players must be 1 to 8, not 9\n");
  }
  SECTION("play") {
    RunningProcess eight(k_lockstep, {"play", "--players", "8", "--port", "0"});
    CHECK(eight.wait_for("play: you are player 0"));
    const ProcessResult nine = lockstep_cli({"play", "--players", "9", "--port", "0"});
    CHECK(nine.exit_code == 2);
    CHECK(nine.err == "error: players must be 1 to 8, not 9\n");
  }
  SECTION("host") {
    const std::string port = std::to_string(free_udp_port());
    const ProcessResult eight = lockstep_cli({"host", "--players", "8", "--port", port, "--wait-timeout", "1"});
    CHECK(eight.exit_code == 3);  // accepted, and gave up waiting for 7 joiners
    // Refused before it binds; were it taken, the host would give up waiting rather than hang the test.
    const ProcessResult nine = lockstep_cli({"host", "--players", "9", "--port", port, "--wait-timeout", "5"});
    CHECK(nine.exit_code == 2);
    CHECK(nine.err == "error: --players: '9' is not a whole number from 1 to 8\n");
  }
  SECTION("a golden file") {
    const ProcessResult eight = regress_arena_with(8);
    CHECK(eight.out.find("FAIL players: no hashes held") != std::string::npos);  // read, not refused
    const ProcessResult nine = regress_arena_with(9);
    CHECK(nine.exit_code != 0);
    CHECK(nine.err.find("players: players must be 1 to 8, not 9") != std::string::npos);
  }
}

TEST_CASE("run, play and host take a billion ticks and refuse one more") {
  const std::string most = std::to_string(lockstep::cli::k_max_command_ticks);
  const std::string more = std::to_string(lockstep::cli::k_max_command_ticks + 1);
  for (const std::string command : {"run", "play", "host"}) {
    INFO(command);
    std::vector<std::string> args = {command, "--ticks", more};
    // Were the host to take it, it would give up waiting for players rather than hang the test.
    if (command == "host") args.insert(args.end(), {"--port", std::to_string(free_udp_port()), "--wait-timeout", "5"});
    const ProcessResult r = lockstep_cli(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("error: --ticks: '" + more + "' is not a whole number from ") == 0);
    CHECK(r.err.find(" to " + most + "\n") != std::string::npos);
  }
}
