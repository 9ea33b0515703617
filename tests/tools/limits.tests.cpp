// Each limit pinned at its one definition; every way into a World session — `run`, `play`, `host`
// and a golden file — taking the same number of players and refusing one more; and each option of
// the command line refused one past its named limit, with the limit in its message.

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep/cli/command_limits.hpp"
#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/tick_limit.hpp"
#include "lockstep/engine/world_config.hpp"
#include "lockstep/net/wire/wire.hpp"
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
  STATIC_REQUIRE(lockstep::k_max_world_players == 256);
  STATIC_REQUIRE(lockstep::net::k_max_session_players == 256);
  STATIC_REQUIRE(lockstep::replay::k_max_replay_players == 256);
  STATIC_REQUIRE(lockstep::k_tick_limit == std::uint64_t{1} << 40);
  STATIC_REQUIRE(lockstep::cli::k_max_command_ticks == 1'000'000'000);
  STATIC_REQUIRE(lockstep::replay::k_max_golden_ticks == 10'000'000);
  // What each one bounds holds what the next one hands it.
  STATIC_REQUIRE(lockstep::net::k_max_session_players >= lockstep::k_max_world_players);
  STATIC_REQUIRE(lockstep::replay::k_max_replay_players >= lockstep::net::k_max_session_players);
  STATIC_REQUIRE(lockstep::replay::k_max_golden_ticks <= lockstep::cli::k_max_command_ticks);
  STATIC_REQUIRE(lockstep::cli::k_max_command_ticks < lockstep::k_tick_limit);
}

TEST_CASE("every other limit has the value the documentation and the protocol promise") {
  using namespace lockstep;
  STATIC_REQUIRE(k_max_tick_rate_hz == 1000);
  STATIC_REQUIRE(k_max_bodies == 1u << 20);
  STATIC_REQUIRE(k_max_arena_bodies + k_max_world_players <= k_max_bodies);
  STATIC_REQUIRE(k_max_arena_ropes == 1000);
  STATIC_REQUIRE(k_max_rope_links == 1000);
  STATIC_REQUIRE(k_max_substeps == 64);
  STATIC_REQUIRE(net::k_max_input_delay == 60);
  STATIC_REQUIRE(net::k_max_prediction_window == 12);
  STATIC_REQUIRE(net::k_default_input_tolerance == 8);
  STATIC_REQUIRE(net::k_max_input_tolerance == 600);
  STATIC_REQUIRE(net::k_max_spectators == 16);
  STATIC_REQUIRE(net::k_max_datagram_bytes == 1200);
  STATIC_REQUIRE(net::k_max_config_bytes == 960);
  STATIC_REQUIRE(net::k_max_tick_input_bytes == 512);
  // The built-in world's 2-byte inputs fit a tick of the most players.
  STATIC_REQUIRE(net::k_max_session_players * ButtonInput::k_bytes <= net::k_max_tick_input_bytes);
  STATIC_REQUIRE(cli::k_max_port == 65535);
  STATIC_REQUIRE(cli::k_min_timeout_ms == 100);
  STATIC_REQUIRE(cli::k_max_timeout_ms == 600'000);
  STATIC_REQUIRE(cli::k_min_notify_ms == 50);
  STATIC_REQUIRE(cli::k_max_notify_ms == 600'000);
  STATIC_REQUIRE(cli::k_max_wait_timeout_s == 86'400);
  STATIC_REQUIRE(cli::k_max_state_mb == 1u << 20);
  STATIC_REQUIRE(cli::k_max_diff_fields == 1'000'000);
  STATIC_REQUIRE(cli::k_max_regress_jobs == 1024);
  STATIC_REQUIRE(cli::k_max_case_timeout_s == 7 * 24 * 3600);
  STATIC_REQUIRE(cli::k_min_case_memory_mb == 16);
  STATIC_REQUIRE(cli::k_max_case_memory_mb == 1u << 24);
  STATIC_REQUIRE(cli::k_max_lab_steps == 100'000'000);
}

TEST_CASE("the command line bounds each option by its named limit and names it when it refuses") {
  // Each refused one past its limit, before a socket is bound or a file read; the message names the
  // bound from its one definition.
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::string port = std::to_string(free_udp_port());
  const auto number = [](std::uint64_t n) { return std::to_string(n); };
  const auto past = [](std::uint64_t n) { return std::to_string(n + 1); };
  const std::vector<Case> cases = {
      {{"host", "--port", port, "--tick-rate", past(lockstep::k_max_tick_rate_hz)},
       "--tick-rate: '" + past(lockstep::k_max_tick_rate_hz) + "' is not a whole number from 1 to " +
           number(lockstep::k_max_tick_rate_hz)},
      {{"host", "--port", port, "--input-delay", past(lockstep::net::k_max_input_delay)},
       "'" + past(lockstep::net::k_max_input_delay) + "' is not a whole number from 0 to " +
           number(lockstep::net::k_max_input_delay)},
      {{"host", "--port", port, "--rollback", past(lockstep::net::k_max_prediction_window)},
       "from 0 to " + number(lockstep::net::k_max_prediction_window)},
      {{"host", "--port", port, "--input-tolerance", past(lockstep::net::k_max_input_tolerance)},
       "from 1 to " + number(lockstep::net::k_max_input_tolerance)},
      {{"host", "--port", port, "--input-tolerance", "0"}, "from 1 to " + number(lockstep::net::k_max_input_tolerance)},
      {{"host", "--port", past(lockstep::cli::k_max_port)}, "from 1 to " + number(lockstep::cli::k_max_port)},
      {{"host", "--port", port, "--timeout-ms", past(lockstep::cli::k_max_timeout_ms)},
       "from " + number(lockstep::cli::k_min_timeout_ms) + " to " + number(lockstep::cli::k_max_timeout_ms)},
      {{"host", "--port", port, "--notify-ms", past(lockstep::cli::k_max_notify_ms)},
       "from " + number(lockstep::cli::k_min_notify_ms) + " to " + number(lockstep::cli::k_max_notify_ms)},
      {{"host", "--port", port, "--wait-timeout", past(lockstep::cli::k_max_wait_timeout_s)},
       "from 1 to " + number(lockstep::cli::k_max_wait_timeout_s)},
      {{"token", "--key", "k", "--role", "player", "--host-id", "1", "--out", "t", "--slot",
        number(lockstep::net::k_max_session_players)},
       "'" + number(lockstep::net::k_max_session_players) + "' is not a whole number from 0 to " +
           number(lockstep::net::k_max_session_players - 1)},
      {{"run", "--bodies", past(lockstep::k_max_arena_bodies)}, "from 0 to " + number(lockstep::k_max_arena_bodies)},
      {{"run", "--substeps", past(lockstep::k_max_substeps)}, "from 1 to " + number(lockstep::k_max_substeps)},
      {{"replay", "x.lsr", "--max-state-mb", past(lockstep::cli::k_max_state_mb)},
       "from 1 to " + number(lockstep::cli::k_max_state_mb)},
      {{"diff", "a.lsr", "b.lsr", "--max-fields", past(lockstep::cli::k_max_diff_fields)},
       "from 0 to " + number(lockstep::cli::k_max_diff_fields)},
      {{"regress", ".", "--jobs", past(lockstep::cli::k_max_regress_jobs)},
       "from 1 to " + number(lockstep::cli::k_max_regress_jobs)},
      {{"regress", ".", "--case-timeout", past(lockstep::cli::k_max_case_timeout_s)},
       "from 1 to " + number(lockstep::cli::k_max_case_timeout_s)},
      {{"regress", ".", "--case-memory-mb", past(lockstep::cli::k_max_case_memory_mb)},
       "from " + number(lockstep::cli::k_min_case_memory_mb) + " to " + number(lockstep::cli::k_max_case_memory_mb)},
      {{"lab", "energy", "--steps", past(lockstep::cli::k_max_lab_steps)},
       "from 1 to " + number(lockstep::cli::k_max_lab_steps)},
  };
  for (const Case& c : cases) {
    INFO(c.args[0] << " " << c.args[c.args.size() - 2] << " " << c.args.back());
    const ProcessResult r = lockstep_cli(c.args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.error) != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
  }
  // The help text gives the same bounds.
  const std::string host_help = lockstep_cli({"host", "--help"}).out;
  CHECK(host_help.find("(0 to " + number(lockstep::net::k_max_input_delay) + ")") != std::string::npos);
  const std::string token_help = lockstep_cli({"token", "--help"}).out;
  CHECK(token_help.find("0 to " + number(lockstep::net::k_max_session_players - 1) + ", or any") != std::string::npos);
}

TEST_CASE("run, play, host and golden files take 256 players and refuse a 257th, naming 1 to 256") {
  SECTION("run") {
    CHECK(lockstep_cli({"run", "--players", "256", "--ticks", "1"}).exit_code == 0);
    const ProcessResult more = lockstep_cli({"run", "--players", "257", "--ticks", "1"});
    CHECK(more.exit_code == 2);
    CHECK(more.err == "error: --players: '257' is not a whole number from 1 to 256\n");
  }
  SECTION("play") {
    RunningProcess most(k_lockstep, {"play", "--players", "256", "--port", "0"});
    CHECK(most.wait_for("play: you are player 0"));
    const ProcessResult more = lockstep_cli({"play", "--players", "257", "--port", "0"});
    CHECK(more.exit_code == 2);
    CHECK(more.err == "error: --players: '257' is not a whole number from 1 to 256\n");
  }
  SECTION("host") {
    const std::string port = std::to_string(free_udp_port());
    const ProcessResult most = lockstep_cli({"host", "--players", "256", "--port", port, "--wait-timeout", "1"});
    CHECK(most.exit_code == 3);  // accepted, and gave up waiting for 255 joiners
    // Refused before it binds; were it taken, the host would give up waiting rather than hang the test.
    const ProcessResult more = lockstep_cli({"host", "--players", "257", "--port", port, "--wait-timeout", "5"});
    CHECK(more.exit_code == 2);
    CHECK(more.err == "error: --players: '257' is not a whole number from 1 to 256\n");
  }
  SECTION("a golden file") {
    const ProcessResult most = regress_arena_with(256);
    CHECK(most.out.find("FAIL players: no hashes held") != std::string::npos);  // read, not refused
    const ProcessResult more = regress_arena_with(257);
    CHECK(more.exit_code != 0);
    CHECK(more.err.find("players: players must be 1 to 256, not 257") != std::string::npos);
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
