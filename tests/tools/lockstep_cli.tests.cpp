// The `lockstep` command as users run it: real processes, real files, exact output forms.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <regex>
#include <thread>
#include <algorithm>
#include <string>
#include <vector>

#include "lockstep_binary.hpp"
#include "process.hpp"
#include "test_scale.hpp"

using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;
using lockstep::testing::k_lockstep;

namespace {

ProcessResult run_lockstep(const std::vector<std::string>& args) { return run_process(k_lockstep, args); }

std::string format_ball_line(long tick, double px, double py, double vx, double vy) {
  char line[160];
  std::snprintf(line, sizeof line, "tick %ld  pos (%.4f, %.4f)  vel (%.4f, %.4f)", tick, px + 0.0,
                py + 0.0, vx + 0.0, vy + 0.0);
  return line;
}

/// The ball lab's formulas, written out independently of the engine: gravity 600 down, thrust
/// 1,500 up during ticks [a, b], drag 0.98, dt 1/60; semi-implicit unless `explicit_euler`.
std::vector<std::string> expected_ball(long ticks, long a, long b, bool explicit_euler) {
  std::vector<std::string> lines;
  double y = 0.0;
  double v = 0.0;
  const double dt = 1.0 / 60.0;
  for (long t = 1; t <= ticks; ++t) {
    const double accel = (t >= a && t <= b) ? 600.0 - 1500.0 : 600.0;
    if (explicit_euler) {
      y = y + v * dt;
      v = (v + accel * dt) * 0.98;
    } else {
      v = (v + accel * dt) * 0.98;
      y = y + v * dt;
    }
    if (t % 30 == 0) lines.push_back(format_ball_line(t, 160.0, y, 0.0, v));
  }
  return lines;
}

std::vector<std::string> tick_lines(const ProcessResult& r) {
  std::vector<std::string> out;
  for (const std::string& line : r.lines()) {
    if (line.rfind("tick ", 0) == 0) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("run ends with 'tick N hash <16 hex>' and the hash log has ticks 0 to N",
          "[tools][run]") {
  TempDir dir;
  const ProcessResult r = run_lockstep({"run", "--ticks", "120", "--hash-log", dir.file("h.log")});
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_match(r.last_line(), std::regex("tick 120 hash [0-9a-f]{16}")));
  const std::string log = read_file(dir.file("h.log"));
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = log.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(log.substr(start, end - start));
  }
  REQUIRE(lines.size() == 121);
  for (std::size_t t = 0; t < lines.size(); ++t) {
    REQUIRE(std::regex_match(lines[t], std::regex(std::to_string(t) + " [0-9a-f]{16}")));
  }
  CHECK(lines.back().substr(4) == r.last_line().substr(std::string("tick 120 hash ").size()));
}

TEST_CASE("two separate processes agree on every hash of an arena run, with and without the sync test",
          "[tools][run][determinism]") {
  TempDir dir;
#ifdef LOCKSTEP_PEER_BINARY
  // Two processes of two builds are compared at every one of 10,000 ticks below.
  const std::string ticks = "2000";
#else
  const std::string ticks = std::to_string(lockstep::testing::scaled(10000, 500));
#endif
  const ProcessResult a = run_lockstep({"run", "--ticks", ticks, "--hash-log", dir.file("a.log")});
  const ProcessResult b = run_lockstep({"run", "--ticks", ticks, "--hash-log", dir.file("b.log")});
  const ProcessResult sync = run_lockstep({"run", "--ticks", ticks, "--sync-test"});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  REQUIRE(sync.exit_code == 0);
  CHECK(a.last_line() == b.last_line());
  CHECK(sync.last_line() == a.last_line());
  const std::string log_a = read_file(dir.file("a.log"));
  CHECK(log_a.size() > std::stoull(ticks) * 18);
  CHECK(log_a == read_file(dir.file("b.log")));
}

#ifdef LOCKSTEP_PEER_BINARY
TEST_CASE("a build with another compiler and optimisation level gives the same hash at every tick",
          "[tools][run][determinism][cross-build]") {
  TempDir dir;
  const ProcessResult ours = run_lockstep({"run", "--ticks", "10000", "--hash-log", dir.file("ours.log")});
  const ProcessResult peer = run_process(LOCKSTEP_PEER_BINARY,
                                         {"run", "--ticks", "10000", "--hash-log", dir.file("peer.log")});
  REQUIRE(ours.exit_code == 0);
  REQUIRE(peer.exit_code == 0);
  INFO("this build: " << k_lockstep << "\npeer build: " << LOCKSTEP_PEER_BINARY);
  CHECK(ours.last_line() == peer.last_line());
  CHECK(read_file(dir.file("ours.log")) == read_file(dir.file("peer.log")));
  for (const char* scene : {"ball", "spring"}) {
    for (const char* integrator : {"explicit", "semi-implicit", "verlet", "rk4"}) {
      const std::vector<std::string> args = {"run", "--scene", scene, "--integrator", integrator,
                                             "--ticks", "3000"};
      INFO(scene << " " << integrator);
      CHECK(run_lockstep(args).last_line() == run_process(LOCKSTEP_PEER_BINARY, args).last_line());
    }
  }
}
#endif

TEST_CASE("run --threads auto times a step on one thread and on the cores, says which it chose and why, and "
          "changes no hash",
          "[tools][run][threads]") {
  TempDir dir;
  const std::string ticks = std::to_string(lockstep::testing::scaled(300, 60));
  const ProcessResult chosen =
      run_lockstep({"run", "--bodies", "3000", "--ticks", ticks, "--threads", "auto", "--hash-log", dir.file("auto.log")});
  const ProcessResult one = run_lockstep({"run", "--bodies", "3000", "--ticks", ticks, "--hash-log", dir.file("one.log")});
  INFO(chosen.out << chosen.err);
  REQUIRE(chosen.exit_code == 0);
  REQUIRE(one.exit_code == 0);
  CHECK(chosen.last_line() == one.last_line());
  CHECK(read_file(dir.file("auto.log")) == read_file(dir.file("one.log")));
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::smatch m;
  if (cores == 1) {
    CHECK(chosen.err.empty());  // nothing to choose between
  } else {
    REQUIRE(std::regex_search(chosen.err, m, std::regex("note: --threads auto: ([0-9]+) threads? \\(a step took ([0-9]+) µs "
                                                         "on 1, ([0-9]+) µs on ([0-9]+)\\)\n")));
    CHECK(m[4].str() == std::to_string(std::min(cores, 64u)));
    // The faster of the two, as measured.
    const bool cores_faster = std::stod(m[3].str()) < std::stod(m[2].str());
    CHECK(m[1].str() == (cores_faster ? m[4].str() : "1"));
    // The run describes the count it steps on.
    CHECK((chosen.out.find(", " + m[1].str() + " threads") != std::string::npos) == (m[1].str() != "1"));
  }
}

TEST_CASE("every scene and integrator runs and ends with the hash line", "[tools][run]") {
  for (const char* scene : {"arena", "ball", "spring"}) {
    for (const char* integrator : {"explicit", "semi-implicit", "verlet", "rk4"}) {
      const ProcessResult r = run_lockstep({"run", "--scene", scene, "--integrator", integrator,
                                        "--ticks", "60", "--bodies", "100", "--sync-test"});
      INFO(scene << " " << integrator << ": " << r.err);
      REQUIRE(r.exit_code == 0);
      CHECK(std::regex_match(r.last_line(), std::regex("tick 60 hash [0-9a-f]{16}")));
    }
  }
}

TEST_CASE("lab ball prints the formula's values every 30th tick", "[tools][lab]") {
  SECTION("defaults: free fall, 300 ticks") {
    const ProcessResult r = run_lockstep({"lab", "ball"});
    REQUIRE(r.exit_code == 0);
    CHECK(tick_lines(r) == expected_ball(300, 0, -1, false));
    CHECK(tick_lines(r)[1] == "tick 60  pos (160.0000, 208.9042)  vel (0.0000, 344.1990)");
    CHECK_THAT(r.out, Catch::Contains("per-tick gain 9.8000"));
    CHECK_THAT(r.out, Catch::Contains("terminal speed 490.0000"));
  }
  SECTION("thrust during ticks 121-180, 600 ticks") {
    const ProcessResult r = run_lockstep({"lab", "ball", "--thrust", "121-180", "--ticks", "600"});
    REQUIRE(r.exit_code == 0);
    CHECK(tick_lines(r) == expected_ball(600, 121, 180, false));
    CHECK(tick_lines(r).size() == 20);
  }
  SECTION("explicit Euler moves with the old velocity") {
    const ProcessResult r = run_lockstep({"lab", "ball", "--explicit", "--thrust", "1-45"});
    REQUIRE(r.exit_code == 0);
    CHECK(tick_lines(r) == expected_ball(300, 1, 45, true));
    CHECK(tick_lines(r) != expected_ball(300, 1, 45, false));
  }
  SECTION("wall-clock pacing runs and prints the same form") {
    const ProcessResult r = run_lockstep({"lab", "ball", "--wall-clock", "--ticks", "30"});
    REQUIRE(r.exit_code == 0);
    REQUIRE(tick_lines(r).size() == 1);
    CHECK(std::regex_match(tick_lines(r)[0],
                           std::regex(R"(tick 30  pos \(160\.0000, -?[0-9]+\.[0-9]{4}\)  vel \(0\.0000, -?[0-9]+\.[0-9]{4}\))")));
  }
}

TEST_CASE("lab energy prints final/initial energy for all four integrators", "[tools][lab]") {
  TempDir dir;
  const double k = 2.0;
  const double dt = 0.05;
  const int steps = 400;
  const ProcessResult r = run_lockstep({"lab", "energy", "--k", "2", "--dt", "0.05", "--steps", "400",
                                    "--svg", dir.file("e.svg")});
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> lines = r.lines();
  REQUIRE(lines.size() == 4);

  // Independent recurrences for the expected ratios.
  auto ratio = [&](int method) {
    double x = 1.0;
    double v = 0.0;
    for (int i = 0; i < steps; ++i) {
      if (method == 0) {  // explicit
        const double a = -k * x;
        x += v * dt;
        v += a * dt;
      } else if (method == 1) {  // semi-implicit
        v += -k * x * dt;
        x += v * dt;
      } else if (method == 2) {  // velocity Verlet
        const double a0 = -k * x;
        x += v * dt + 0.5 * a0 * dt * dt;
        v += 0.5 * (a0 - k * x) * dt;
      } else {  // RK4
        const double k1x = v, k1v = -k * x;
        const double k2x = v + 0.5 * dt * k1v, k2v = -k * (x + 0.5 * dt * k1x);
        const double k3x = v + 0.5 * dt * k2v, k3v = -k * (x + 0.5 * dt * k2x);
        const double k4x = v + dt * k3v, k4v = -k * (x + dt * k3x);
        x += dt / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x);
        v += dt / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v);
      }
    }
    return (0.5 * v * v + 0.5 * k * x * x) / (0.5 * k);
  };
  const char* names[] = {"explicit", "semi-implicit", "verlet", "rk4"};
  for (int m = 0; m < 4; ++m) {
    char expected[64];
    std::snprintf(expected, sizeof expected, "%s %.6f", names[m], ratio(m));
    CHECK(lines[static_cast<std::size_t>(m)] == expected);
  }
  // Explicit Euler's growth is exactly (1 + k·dt²)^steps.
  CHECK(std::stod(lines[0].substr(9)) == Approx(std::pow(1.0 + k * dt * dt, steps)).epsilon(1e-6));

  const std::string svg = read_file(dir.file("e.svg"));
  CHECK_THAT(svg, Catch::StartsWith("<svg"));
  std::size_t polylines = 0;
  for (std::size_t at = 0; (at = svg.find("<polyline", at)) != std::string::npos; ++at) ++polylines;
  CHECK(polylines == 4);
  for (const char* name : names) CHECK_THAT(svg, Catch::Contains(std::string(">") + name + "<"));
  CHECK_THAT(svg, Catch::Contains("time (s)"));
}

TEST_CASE("bad arguments give one 'error:' line on stderr and exit code 2", "[tools][errors]") {
  TempDir dir;
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--ticks", "banana"},
      {"run", "--ticks", "-5"},
      {"run", "--scene", "moon"},
      {"run", "--players", "0"},
      {"run", "--players", "257"},
      {"run", "--integrator", "leapfrog"},
      {"run", "--substeps", "0"},
      {"run", "--bogus"},
      {"run", "--hash-log", dir.file("no/such/dir/h.log")},
      {"lab", "ball", "--thrust", "9-3"},
      {"lab", "ball", "--thrust", "x"},
      {"lab", "ball", "--thrust", "0-3"},
      {"lab", "energy", "--dt", "0"},
      {"lab", "energy", "--svg", dir.file("no/such/dir/e.svg")},
      {"lab"},
      // Numbers are taken whole or refused: no sign flip, no saturation, no empty-as-zero, no
      // NaN or infinity, nothing trailing.
      {"run", "--seed", "-1"},
      {"run", "--seed", "010"},
      {"host", "--timeout-ms", "0143", "--wait-timeout", "5"},
      {"run", "--seed", "99999999999999999999999"},
      {"run", "--seed", "18446744073709551616"},
      {"run", "--seed", ""},
      {"run", "--hash-every", ""},
      {"run", "--keyframe-every", ""},
      {"run", "--ticks", "1e3"},
      {"run", "--ticks", " 5"},
      {"run", "--ticks", "5 "},
      {"run", "--bodies", "+5"},
      {"run", "--threads", "automatic"},
      {"run", "--threads", "65"},
      // (a host that took these would give up waiting for players within 5 s, not hang the test)
      {"host", "--threads", "", "--wait-timeout", "5"},
      {"host", "--port", "65536", "--wait-timeout", "5"},
      {"host", "--port", "0", "--wait-timeout", "5"},
      {"host", "--port", "", "--wait-timeout", "5"},
      {"lab", "energy", "--k", "nan"},
      {"lab", "energy", "--k", "inf"},
      {"lab", "energy", "--k", ""},
      {"lab", "energy", "--dt", "0.1x"},
      {"frobnicate"},
      {"frobnicate", "--help"},
      {},
  };
  for (const std::vector<std::string>& args : cases) {
    const ProcessResult r = run_lockstep(args);
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    INFO("lockstep " << joined << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::regex_match(r.err, std::regex("error: [^\n]+\n")));
  }
}

TEST_CASE("a bare lockstep lists its commands and says one is required", "[tools][help]") {
  const ProcessResult r = run_lockstep({});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("Usage:"));
  for (const char* command : {"run", "replay", "info", "diff", "regress", "host", "join", "spectate", "lab"}) {
    CHECK_THAT(r.out, Catch::Contains(std::string("  ") + command));
  }
  CHECK(r.err == "error: a command is required (see the list above)\n");
}

TEST_CASE("every command has help text", "[tools][help]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"run", "--help"}, {"lab", "--help"}, {"lab", "ball", "--help"},
           {"lab", "energy", "--help"}, {"replay", "--help"}, {"info", "--help"}, {"diff", "--help"},
           {"regress", "--help"}, {"export", "--help"}, {"host", "--help"}, {"join", "--help"},
           {"spectate", "--help"}}) {
    const ProcessResult r = run_lockstep(args);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("Usage:"));
  }
}
