// lockstep::cli as a user's program gets it: cli::main for two simulations at once, and the two
// example programs of examples/ built against this tree, run as real processes on real files and
// real UDP sockets. The networked sessions, which run in real time, are tagged [processes]: a build
// configured without LOCKSTEP_TEST_NETWORK_PROCESSES (CI's -O0 build) leaves them to another.

#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "ports.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"

using lockstep::testing::k_two_simulations;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::RunningProcess;
using lockstep::testing::TempDir;
using lockstep::testing::k_lockstep;

namespace {

const std::string k_particle = PARTICLE_BINARY;
const std::string k_duel = DUEL_BINARY;
/// A host gives up waiting for its players after this long (exit 3): when a joiner fails, the test
/// ends within a minute rather than at ctest's timeout. Joining takes milliseconds.
const char* const k_wait_timeout_s = "60";

std::string hash_of(const std::string& last_line) { return last_line.substr(last_line.rfind(' ') + 1); }

}  // namespace

TEST_CASE("cli::main of two simulations plays each one's replays by the name they record",
          "[tools][cli]") {
  TempDir dir;
  const ProcessResult walkers = run_process(k_two_simulations, {"run", "--ticks", "300", "--record", dir.file("w.lsr")});
  REQUIRE(walkers.exit_code == 0);
  CHECK(walkers.out.find("simulation lockstep.test.walkers: 2 players (bots)") != std::string::npos);
  const ProcessResult world =
      run_process(k_two_simulations, {"run", "--sim", "lockstep.world2d", "--scene", "ball", "--ticks", "300", "--record", dir.file("b.lsr")});
  REQUIRE(world.exit_code == 0);
  // The world's run is the lockstep program's run, hash for hash.
  CHECK(world.last_line() == run_process(k_lockstep, {"run", "--scene", "ball", "--ticks", "300"}).last_line());

  const ProcessResult walker_replay = run_process(k_two_simulations, {"replay", dir.file("w.lsr")});
  CHECK(walker_replay.exit_code == 0);
  CHECK(walker_replay.last_line() == "ok 300 ticks verified, 300 hashes checked, final hash " + hash_of(walkers.last_line()));
  const ProcessResult world_replay = run_process(k_two_simulations, {"replay", dir.file("b.lsr")});
  CHECK(world_replay.exit_code == 0);
  CHECK(world_replay.last_line() == "ok 300 ticks verified, 300 hashes checked, final hash " + hash_of(world.last_line()));
  CHECK(run_process(k_two_simulations, {"info", dir.file("w.lsr")}).out.find("simulation  lockstep.test.walkers") != std::string::npos);
  CHECK(run_process(k_two_simulations, {"info", dir.file("b.lsr")}).out.find("scene       ball") != std::string::npos);
  CHECK(run_process(k_two_simulations, {"export", dir.file("w.lsr"), "--every", "100"}).lines().size() == 4);

  // The walkers' own options, declared through their hooks, build the recorded configuration.
  REQUIRE(run_process(k_two_simulations, {"run", "--ring", "50", "--players", "3", "--ticks", "10", "--record", dir.file("r.lsr")})
              .exit_code == 0);
  const ProcessResult ring = run_process(k_two_simulations, {"info", dir.file("r.lsr")});
  CHECK(ring.out.find("\"players\": 3") != std::string::npos);
  CHECK(ring.out.find("\"ring\": 50") != std::string::npos);
  const ProcessResult too_many = run_process(k_two_simulations, {"run", "--players", "9"});
  CHECK(too_many.exit_code == 2);
  CHECK(too_many.err == "error: walkers take 1 to 8 players, not 9\n");

  // Each simulation keeps its own options; a name the program does not know is refused.
  CHECK(run_process(k_two_simulations, {"run", "--scene", "ball"}).exit_code == 2);
  const ProcessResult unknown = run_process(k_two_simulations, {"run", "--sim", "nope"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.rfind("error: ", 0) == 0);
  // The lockstep program knows only the built-in world, and says so.
  const ProcessResult foreign = run_process(k_lockstep, {"replay", dir.file("w.lsr")});
  CHECK(foreign.exit_code == 2);
  CHECK(foreign.err.find("simulation 'lockstep.test.walkers'") != std::string::npos);
}

TEST_CASE("the particle example records, replays, describes, diffs and exports its own simulation",
          "[tools][cli][examples]") {
  TempDir dir;
  const ProcessResult recorded = run_process(k_particle, {"run", "--ticks", "600", "--seed", "3", "--record", dir.file("p.lsr")});
  REQUIRE(recorded.exit_code == 0);
  const std::string hash = hash_of(recorded.last_line());
  CHECK(run_process(k_particle, {"replay", dir.file("p.lsr"), "--from-tick", "100"}).last_line() ==
        "ok 500 ticks verified, 500 hashes checked, final hash " + hash);
  CHECK(run_process(k_particle, {"info", dir.file("p.lsr")}).out.find("simulation  example.particle") != std::string::npos);
  REQUIRE(run_process(k_particle, {"run", "--ticks", "600", "--seed", "3", "--record", dir.file("q.lsr")}).exit_code == 0);
  CHECK(run_process(k_particle, {"diff", dir.file("p.lsr"), dir.file("q.lsr")}).last_line() == "identical through tick 600");
  REQUIRE(run_process(k_particle, {"run", "--ticks", "600", "--seed", "4", "--record", dir.file("r.lsr")}).exit_code == 0);
  const ProcessResult differ = run_process(k_particle, {"diff", dir.file("p.lsr"), dir.file("r.lsr")});
  CHECK(differ.exit_code == 1);
  CHECK(differ.out.find("state.x: ") != std::string::npos);
  const ProcessResult rows = run_process(k_particle, {"export", dir.file("p.lsr"), "--every", "300", "--fields", "x"});
  REQUIRE(rows.lines().size() == 3);
  CHECK(rows.lines()[2].find("\"tick\":600,\"hash\":\"" + hash + "\"") != std::string::npos);
  // The particle's replays are not the built-in world's.
  CHECK(run_process(k_lockstep, {"replay", dir.file("p.lsr")}).exit_code == 2);
}

TEST_CASE("a simulation's predict_input hook is what host and join predict with, and the rollbacks its wrong "
          "guesses cause change no recorded byte",
          "[tools][cli][net][prediction][processes]") {
  TempDir dir;
  const std::string port = std::to_string(lockstep::testing::free_udp_port());
  // 45 ms each way, 5 ticks and more of round trip against a local delay of 1: both players
  // predict the other all the session long, and more so on a loaded machine, never less.
  RunningProcess host(k_two_simulations, {"host", "--open", "--port", port, "--players", "2", "--bot", "--ticks", "300",
                              "--rollback", "8", "--netsim", "delay=45,seed=1", "--record", dir.file("host.lsr"),
                              "--stats-json", dir.file("host.json"), "--wait-timeout", k_wait_timeout_s});
  REQUIRE(host.wait_for("host: session"));
  RunningProcess peer(k_two_simulations, {"join", "127.0.0.1:" + port, "--bot", "--netsim", "delay=45,seed=2",
                              "--record", dir.file("peer.lsr"), "--stats-json", dir.file("peer.json")});
  const ProcessResult hosted = host.finish();
  const ProcessResult joined = peer.finish();
  INFO(hosted.out << hosted.err << joined.out << joined.err);
  REQUIRE(hosted.exit_code == 0);
  REQUIRE(joined.exit_code == 0);
  CHECK(hosted.last_line() == joined.last_line());
  CHECK(lockstep::testing::read_file(dir.file("host.lsr")) == lockstep::testing::read_file(dir.file("peer.lsr")));
  // The hook says so when a session first asks it (two_simulations_main.cpp): what each process
  // did, not how often, which depends on the machine's load. That a predictor's guesses decide the
  // rollbacks is shown on virtual time (prediction_sessions.tests.cpp, a predictor always wrong).
  const std::string asked = "two_simulations: predicting with the walkers' predict_input hook\n";
  CHECK_THAT(hosted.err, Catch::Contains(asked));
  CHECK_THAT(joined.err, Catch::Contains(asked));
  for (const char* name : {"host.json", "peer.json"}) {
    const std::string json = lockstep::testing::read_file(dir.file(name));
    INFO(name << ": " << json);
    std::smatch m;
    REQUIRE(std::regex_search(json, m, std::regex("\"rollbacks\": ([0-9]+)")));
    // The hook guesses a change of step on every tick a walker keeps its step: some of what each
    // player predicted was wrong, and it rolled back.
    CHECK(std::stoul(m[1].str()) > 0);
  }
}

TEST_CASE("the duel example plays a networked game from its own loop, and both sides' recordings agree",
          "[tools][cli][examples][net][processes]") {
  TempDir dir;
  const std::string port = std::to_string(lockstep::testing::free_udp_port());
  RunningProcess server(k_duel, {"serve", "--port", port, "--ticks", "300", "--record", dir.file("red.lsr")});
  REQUIRE(server.wait_for("duel: invite "));
  const std::string out = server.output();
  const std::size_t at = out.find("duel: invite ") + std::string("duel: invite ").size();
  const std::string invite = out.substr(at, out.find('\n', at) - at);
  // Without the invite, or with a damaged one, blue does not get in.
  const ProcessResult stranger = run_process(k_duel, {"connect", "127.0.0.1:" + port});
  CHECK(stranger.exit_code == 2);
  std::string damaged = invite;
  damaged[10] = damaged[10] == 'A' ? 'B' : 'A';
  const ProcessResult typo = run_process(k_duel, {"connect", "127.0.0.1:" + port, "--invite", damaged});
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::Contains("damaged"));
  RunningProcess client(k_duel, {"connect", "127.0.0.1:" + port, "--invite", invite, "--record", dir.file("blue.lsr")});
  const ProcessResult red = server.finish();
  const ProcessResult blue = client.finish();
  REQUIRE(red.exit_code == 0);
  REQUIRE(blue.exit_code == 0);
  CHECK(red.last_line().rfind("tick 300 hash ", 0) == 0);
  CHECK(red.last_line() == blue.last_line());
  // The game printed the state it read between ticks.
  CHECK(red.out.find("  red (") != std::string::npos);
  const ProcessResult replayed = run_process(k_duel, {"replay", dir.file("blue.lsr")});
  CHECK(replayed.last_line() == "ok 300 ticks verified, 300 hashes checked, final hash " + hash_of(red.last_line()));
  CHECK(run_process(k_duel, {"diff", dir.file("red.lsr"), dir.file("blue.lsr")}).last_line() == "identical through tick 300");
}
