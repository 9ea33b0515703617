// Host migration on virtual time: the host is lost (killed, or leaving) mid-session; its first
// successor takes over, the survivors move to it, and every survivor finishes on one hash, their
// recordings identical — in lockstep, with prediction, behind a relay host, with a spectator,
// with loss on every link, and when the successor is lost in its turn.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/net/session/virtual_sessions.hpp"
#include "process.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::net::VirtualSessions;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerSim;
using net::Outcome;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr std::uint64_t k_ticks = 600;

/// How the host is lost, and what else the session has.
struct Setup {
  std::uint64_t lose_at = 200;   ///< once participant 1 stepped this tick
  bool leave = false;            ///< the host leaves (says goodbye) rather than dies
  bool cut = false;              ///< the host's network is cut both ways for 6 s rather than it dies
  bool relay = false;
  std::uint32_t window = 0;      ///< prediction
  bool spectator = false;
  bool lose_successor = false;   ///< the first successor dies as soon as it has taken over
  bool migration = true;
  net::NetSimConfig faults{};    ///< on every link
};

struct Migration {
  VirtualSessions<WalkerSim> group;
  std::vector<std::vector<net::ProtocolEvent>> events;        ///< each participant's
  std::vector<std::vector<std::pair<net::Instant, std::uint64_t>>> steps;  ///< each one's (time, tick stepped)
  net::Instant lost_at{0};
  std::vector<std::size_t> survivors;
};

/// A host and three players (player slots 0–2 behind a relay host), each player recording into
/// `dir`; the host is lost as `setup` says.
void lose_host(Migration& m, const testing::TempDir& dir, const Setup& setup) {
  VirtualSessions<WalkerSim>& group = m.group;
  net::HostConfig host = host_config(k_ticks);
  host.relay = setup.relay;
  host.prediction_window = setup.window;
  host.migration = setup.migration;
  REQUIRE(group.host({setup.relay ? 3u : 4u, 1000}, 5, host, setup.faults, walker_step).ok());
  for (int i = 1; i <= 3; ++i) {
    net::JoinConfig join = join_config();
    join.record = dir.file("p" + std::to_string(i) + ".lsr");
    group.join(net::Role::player, join, setup.faults, walker_step);
  }
  if (setup.spectator) group.join(net::Role::spectator, join_config(), setup.faults, walker_step);
  for (std::size_t i = 1; i < group.size(); ++i) m.survivors.push_back(i);
  m.events.resize(group.size());
  m.steps.resize(group.size());
  group.after_frame = [&](std::size_t i, net::Instant now) {
    for (net::ProtocolEvent e; group[i].session->poll_event(e);) m.events[i].push_back(e);
    if (m.steps[i].empty() || m.steps[i].back().second != group[i].session->tick()) m.steps[i].emplace_back(now, group[i].session->tick());
  };
  bool successor_lost = false;
  REQUIRE(group.run(seconds(120), [&](net::Instant now) {
    if (m.lost_at == net::Instant{0} && group[1].session->tick() >= setup.lose_at) {
      m.lost_at = now;
      if (setup.leave) group[0].session->leave(now);
      else if (setup.cut) group.network().cut(VirtualSessions<WalkerSim>::address(0), now, now + seconds(6), true);
      else group.kill(0);
    }
    // The successor dies once participant 3 has moved to it: during its handoff, or just after.
    if (setup.lose_successor && !successor_lost && !m.events[3].empty() &&
        std::holds_alternative<net::event::HostMigrated>(m.events[3].back())) {
      successor_lost = true;
      group.kill(1);
      m.survivors.erase(m.survivors.begin());
    }
  }));
  group.after_frame = {};
}

template <class E>
std::vector<E> all_of(const std::vector<net::ProtocolEvent>& events) {
  std::vector<E> out;
  for (const net::ProtocolEvent& e : events) {
    if (const E* x = std::get_if<E>(&e)) out.push_back(*x);
  }
  return out;
}

/// Every survivor finished every tick on one hash, its recording (the players') the same bytes.
void check_survivors(const Migration& m, const testing::TempDir& dir) {
  const std::string recording = testing::read_file(dir.file("p3.lsr"));  // participant 3 always survives
  for (const std::size_t i : m.survivors) {
    INFO("participant " << i << ": " << m.group[i].session->result()->message);
    CHECK(m.group[i].session->result()->outcome == Outcome::finished);
    CHECK(m.group[i].session->tick() == k_ticks);
    if (i <= 3) CHECK(testing::read_file(dir.file("p" + std::to_string(i) + ".lsr")) == recording);
    CHECK(m.group[i].hashes == m.group[m.survivors.back()].hashes);
  }
  // The lost host agrees with them as far as the first tick the successor decided (a host cut off
  // steps a few more of its own before it ends).
  const std::map<std::uint64_t, std::uint64_t>& lost = m.group[0].hashes;
  const std::map<std::uint64_t, std::uint64_t>& survivor = m.group[m.survivors.back()].hashes;
  const std::uint64_t handoff = all_of<net::event::HostMigrated>(m.events[m.survivors.back()]).back().tick;
  for (auto it = lost.begin(); it != lost.end() && it->first <= handoff; ++it) CHECK(survivor.at(it->first) == it->second);
}

/// The virtual time from the host's loss until a survivor stepped a tick past the handoff: the
/// first the successor decided.
net::Duration stall_of(const Migration& m, std::uint64_t handoff) {
  net::Instant first = net::Instant::max();
  for (const std::size_t i : m.survivors) {
    for (const auto& [at, tick] : m.steps[i]) {
      if (tick > handoff) {
        first = std::min(first, at);
        break;
      }
    }
  }
  return first - m.lost_at;
}

}  // namespace

TEST_CASE("the host killed mid-session: player 1 takes over, the others move to it, and every survivor finishes on "
          "one hash with an identical recording",
          "[net][session][migration]") {
  for (const std::uint64_t lose_at : {50u, 200u, 401u}) {
    INFO("killed at tick " << lose_at);
    testing::TempDir dir;
    Migration m;
    lose_host(m, dir, {.lose_at = lose_at});
    check_survivors(m, dir);
    std::uint64_t handoff = 0;
    for (std::size_t i = 1; i <= 3; ++i) {
      const std::vector<net::event::HostMigrated> moved = all_of<net::event::HostMigrated>(m.events[i]);
      REQUIRE(moved.size() == 1);
      CHECK(moved[0].took_over == (i == 1));
      CHECK(moved[0].lost_host == "10.0.0.1:7777");
      if (i == 1) {
        handoff = moved[0].tick;
        CHECK(m.group[1].session->host_protocol() != nullptr);
      } else {
        CHECK(moved[0].host_slot == 1);
        CHECK(moved[0].host == "10.0.0.2:40001");
      }
      // The lost host's slot is neutral from the tick after the handoff, for everyone alike.
      const std::vector<net::event::Gone> gone = all_of<net::event::Gone>(m.events[i]);
      REQUIRE(gone.size() == 1);
      CHECK(gone[0].slot == 0);
      CHECK(gone[0].neutral_from_tick == handoff + 1);
    }
    CHECK(handoff >= lose_at);
    CHECK(handoff <= lose_at + 10);
    // The survivors stall for the detection time (half the 3 s timeout) and a handshake, no more.
    const net::Duration stall = stall_of(m, handoff);
    CHECK(stall >= milliseconds(1500));
    CHECK(stall < milliseconds(2000));
  }
}

TEST_CASE("the host lost with prediction on, behind a relay host, with a spectator, leaving, or through loss: the "
          "survivors finish on one hash",
          "[net][session][migration]") {
  Setup setup;
  SECTION("prediction") { setup.window = 8; }
  SECTION("a relay host, succeeded by a player") { setup.relay = true; }
  SECTION("a spectator follows") { setup.spectator = true; }
  SECTION("the host leaves mid-session") { setup.leave = true; }
  SECTION("the host cut off: it ends, its players go on without it") { setup.cut = true; }
  SECTION("5% loss and 30 ms on every link") {
    setup.faults.loss = 0.05;
    setup.faults.delay_ms = 30;
    setup.faults.seed = 3;
  }
  testing::TempDir dir;
  Migration m;
  lose_host(m, dir, setup);
  check_survivors(m, dir);
  for (const std::size_t i : m.survivors) CHECK(all_of<net::event::HostMigrated>(m.events[i]).size() == 1);
  if (setup.cut) {
    // It heard from no one for the detection time: it ends rather than play on alone.
    CHECK(m.group[0].session->result()->outcome == Outcome::network_failed);
    CHECK_THAT(m.group[0].session->result()->message, Catch::StartsWith("every participant has been silent for 1500 ms"));
  }
}

TEST_CASE("a successor lost once a survivor reached it is succeeded by the next", "[net][session][migration]") {
  testing::TempDir dir;
  Migration m;
  lose_host(m, dir, {.lose_successor = true});
  check_survivors(m, dir);
  // Participant 3 moved to player 1, which was lost in its turn; player 2 took over, and 3 moved again.
  const std::vector<net::event::HostMigrated> moved = all_of<net::event::HostMigrated>(m.events[3]);
  REQUIRE(moved.size() == 2);
  CHECK(moved[0].host_slot == 1);
  CHECK(moved.back().host_slot == 2);
  CHECK(moved.back().lost_host == "10.0.0.2:40001");
  CHECK(all_of<net::event::HostMigrated>(m.events[2]).back().took_over);
}

TEST_CASE("host --no-migration: the host's loss ends the session as before", "[net][session][migration]") {
  testing::TempDir dir;
  Migration m;
  lose_host(m, dir, {.migration = false});
  for (const std::size_t i : m.survivors) {
    const net::SessionResult& r = *m.group[i].session->result();
    CHECK(r.outcome == Outcome::network_failed);
    CHECK(r.message.rfind("the host is gone (silent for 3000 ms)", 0) == 0);
    CHECK(all_of<net::event::HostMigrated>(m.events[i]).empty());
  }
}
