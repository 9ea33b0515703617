// The input tolerance (host --input-tolerance N) in whole sessions on the in-memory network and
// virtual time: one player far behind the others has its inputs decided by the host, so that no
// one else waits for it, while every participant — the slow one too — steps and records exactly
// the host's ticks. Without the tolerance the same session waits for the slowest player.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "lockstep/net/session/virtual_sessions.hpp"
#include "process.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::read_file;
using lockstep::testing::TempDir;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerSim;
using net::Outcome;
using net::VirtualSessions;
using std::chrono::seconds;

namespace {

constexpr std::uint64_t k_ticks = 1200;

struct SlowPlayerRun {
  std::vector<net::NetStats> stats;         ///< each participant's at the end
  std::vector<std::uint64_t> stalls_at_1s;  ///< each one's stall ticks one second after tick 1
};

/// The host (slot 0) and three joining players, everyone's link 20 ms each way but the third
/// joiner's, 250 ms each way; each records into `dir` (p0.lsr …).
SlowPlayerRun run_with_slow_player(const TempDir& dir, std::uint32_t tolerance, std::uint32_t window = 0) {
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig link;
  link.delay_ms = 20;
  link.seed = 1;
  net::HostConfig host = host_config(k_ticks);
  host.adaptive_delay = true;
  host.input_tolerance = tolerance;
  host.prediction_window = window;
  host.record = dir.file("p0.lsr");
  REQUIRE(group.host({4, 1000}, 5, host, link, walker_step).ok());
  for (std::uint32_t i = 1; i <= 3; ++i) {
    net::JoinConfig join = join_config();
    join.record = dir.file("p" + std::to_string(i) + ".lsr");
    link.seed = i + 1;
    if (i == 3) {
      link.delay_ms = 250;
      link.in_delay_ms = 230;  // after the host's 20 ms: 250 ms each way
    }
    group.join(net::Role::player, join, link, walker_step);
  }
  SlowPlayerRun run;
  REQUIRE(group.run(seconds(300), [&](net::Instant now) {
    const std::optional<net::Instant> start = group[0].session->protocol().start_time();
    if (run.stalls_at_1s.empty() && start && now >= *start + seconds(1)) {
      for (std::size_t i = 0; i < group.size(); ++i) run.stalls_at_1s.push_back(group[i].session->stats().stall_ticks);
    }
  }));
  REQUIRE(run.stalls_at_1s.size() == 4);
  const std::string host_recording = read_file(dir.file("p0.lsr"));
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i << ": " << group[i].session->result()->message);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].hashes.size() == k_ticks);
    CHECK(read_file(dir.file("p" + std::to_string(i) + ".lsr")) == host_recording);
    run.stats.push_back(group[i].session->stats());
  }
  CHECK(group.agree());
  return run;
}

std::uint32_t largest_delay(const net::NetStats& stats) {
  std::uint32_t largest = 0;
  for (const net::DelayChange& change : stats.delay_changes) largest = std::max(largest, change.delay);
  return largest;
}

}  // namespace

TEST_CASE("with the input tolerance, a player 250 ms each way away stalls no one after the first second, the "
          "others keep an input delay of at most 4, and every recording is the host's",
          "[net][session][tolerance]") {
  TempDir dir;
  const SlowPlayerRun run = run_with_slow_player(dir, net::k_default_input_tolerance);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("participant " << i << ": " << net::stats_json(run.stats[i]));
    CHECK(run.stats[i].stall_ticks == run.stalls_at_1s[i]);
    CHECK(largest_delay(run.stats[i]) <= 4);
    CHECK(run.stats[i].input_delay <= 4);
  }
  // The host decided the slow player's inputs, and only its; the slow player counts them too, and
  // its own inputs that came too late were dropped and counted.
  const std::vector<net::DecidedInputs>& host = run.stats[0].decided;
  REQUIRE(host.size() == 4);
  CHECK(host[0].inputs == 0);
  CHECK(host[1].inputs == 0);
  CHECK(host[2].inputs == 0);
  CHECK(host[3].inputs > k_ticks / 2);
  CHECK(host[3].late_inputs.value_or(0) > k_ticks / 2);
  CHECK(run.stats[0].dropped[net::DropReason::late_input] == *host[3].late_inputs);
  REQUIRE(run.stats[3].decided.size() == 1);
  CHECK(run.stats[3].decided[0].slot == 3);
  // It hears the count with every relay, and the last relays after the end tick is assembled.
  CHECK(run.stats[3].decided[0].inputs == host[3].inputs);
  CHECK_FALSE(run.stats[3].decided[0].late_inputs.has_value());
  CHECK_THAT(net::stats_line(run.stats[3]), Catch::Contains("decided " + std::to_string(host[3].inputs) + " ("));
  CHECK_THAT(net::stats_line(run.stats[0]), Catch::Contains("decided " + std::to_string(host[3].inputs) + " for player 3"));
}

TEST_CASE("without the input tolerance the same session waits for the slowest player: its delay covers the "
          "250 ms link",
          "[net][session][tolerance]") {
  TempDir dir;
  const SlowPlayerRun run = run_with_slow_player(dir, 0);
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("participant " << i);
    CHECK(largest_delay(run.stats[i]) >= 25);  // a 500 ms round trip is 30 ticks
    CHECK(run.stats[i].decided.size() == (i == 0 ? 4u : 1u));
    for (const net::DecidedInputs& d : run.stats[i].decided) CHECK(d.inputs == 0);
  }
}

TEST_CASE("with prediction and the input tolerance, the slow player fills no one's window",
          "[net][session][tolerance][prediction]") {
  TempDir dir;
  const SlowPlayerRun run = run_with_slow_player(dir, net::k_default_input_tolerance, 8);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("participant " << i << ": " << net::stats_json(run.stats[i]));
    CHECK(run.stats[i].stall_ticks == run.stalls_at_1s[i]);
    REQUIRE(run.stats[i].input_latency_p99_ticks.has_value());
    CHECK(*run.stats[i].input_latency_p99_ticks <= 2);
  }
  CHECK(run.stats[0].decided[3].inputs > k_ticks / 2);
}
