// Host migration on virtual time: the host is lost (killed, or leaving) mid-session; its first
// successor takes over, the survivors move to it, and every survivor finishes on one hash, their
// recordings identical — in lockstep, with prediction, behind a relay host, with a spectator,
// with loss on every link, and when the successor is lost in its turn.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
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

/// When the host is lost.
enum class Moment {
  tick,               ///< once participant 1 stepped lose_at
  late_arrived,       ///< 1 s after the late player took its state (it holds a plan by then)
  delay_announced,    ///< once participant 1 heard of a delay change not yet in force
};

/// How the host is lost, and what else the session has.
struct Setup {
  Moment when = Moment::tick;
  std::uint64_t lose_at = 200;   ///< once participant 1 stepped this tick
  bool leave = false;            ///< the host leaves (says goodbye) rather than dies
  bool cut = false;              ///< the host's network is cut both ways for 6 s rather than it dies
  bool relay = false;
  std::uint32_t window = 0;      ///< prediction
  bool spectator = false;
  bool lose_successor = false;   ///< the first successor dies as soon as it has taken over
  bool migration = true;
  std::uint64_t diverge_at = 0;  ///< participant 3 steps once more after this tick (0: never)
  bool resync = false;           ///< the host's --on-desync resync
  bool late = false;             ///< a fifth player slot, taken by participant 4 at tick 150
  bool adaptive = false;         ///< the host's --input-delay auto
  /// Participant 3, once moved, is killed and started again with its reconnect key: told the lost
  /// host's address, then those its key names (the successor's).
  bool restart = false;
  net::NetSimConfig faults{};    ///< on every link
};

struct Migration {
  VirtualSessions<WalkerSim> group;
  std::vector<std::vector<net::ProtocolEvent>> events;        ///< each participant's
  std::vector<std::vector<std::pair<net::Instant, std::uint64_t>>> steps;  ///< each one's (time, tick stepped)
  std::vector<net::Instant> moved_at;  ///< when each one's last HostMigrated came
  net::Instant lost_at{0};
  std::vector<std::size_t> survivors;
  std::optional<std::size_t> restarted;  ///< participant 3's second process
};

template <class E>
std::vector<E> all_of(const std::vector<net::ProtocolEvent>& events) {
  std::vector<E> out;
  for (const net::ProtocolEvent& e : events) {
    if (const E* x = std::get_if<E>(&e)) out.push_back(*x);
  }
  return out;
}

/// A host and three players (player slots 0–2 behind a relay host), each player recording into
/// `dir`; the host is lost as `setup` says.
void lose_host(Migration& m, const testing::TempDir& dir, const Setup& setup) {
  VirtualSessions<WalkerSim>& group = m.group;
  net::HostConfig host = host_config(k_ticks);
  host.relay = setup.relay;
  host.prediction_window = setup.window;
  host.migration = setup.migration;
  host.resync = setup.resync;
  host.adaptive_delay = setup.adaptive;
  host.evidence_dir = dir.path();
  host.notify_after = milliseconds(900);  // not the defaults: a successor runs by the lost host's rules
  host.input_tolerance = 6;
  const std::uint32_t players = (setup.relay ? 3u : 4u) + (setup.late ? 1u : 0u);
  if (setup.late) host.start_with = players - 1;
  REQUIRE(group.host({players, 1000}, 5, host, setup.faults, walker_step).ok());
  for (int i = 1; i <= 3; ++i) {
    net::JoinConfig join = join_config();
    join.record = dir.file("p" + std::to_string(i) + ".lsr");
    join.evidence_dir = dir.path();  // a successor's bundle
    group.join(net::Role::player, join, setup.faults, walker_step);
  }
  if (setup.spectator) group.join(net::Role::spectator, join_config(), setup.faults, walker_step);
  if (setup.diverge_at != 0) {
    group[3].session->debug_perturb(setup.diverge_at, [players](WalkerSim& sim) {
      const std::vector<testing::WalkerInput> push(players, testing::WalkerInput{1});
      (void)sim.step(push);
    });
  }
  for (std::size_t i = 1; i < group.size(); ++i) m.survivors.push_back(i);
  // (Room for the late player from the start: it has frames as soon as it joins.)
  const std::size_t participants = group.size() + (setup.late ? 1 : 0) + (setup.restart ? 1 : 0);
  m.events.resize(participants);
  m.steps.resize(participants);
  m.moved_at.resize(participants);
  group.after_frame = [&](std::size_t i, net::Instant now) {
    for (net::ProtocolEvent e; group[i].session->poll_event(e);) {
      if (std::holds_alternative<net::event::HostMigrated>(e)) m.moved_at[i] = now;
      m.events[i].push_back(e);
    }
    if (m.steps[i].empty() || m.steps[i].back().second != group[i].session->tick()) m.steps[i].emplace_back(now, group[i].session->tick());
  };
  bool successor_lost = false;
  std::optional<std::size_t> late;
  std::optional<net::Instant> late_arrived;
  const auto due = [&](net::Instant now) {
    const std::vector<net::ProtocolEvent>& seen = m.events[late.value_or(1)];
    switch (setup.when) {
      case Moment::tick: return group[1].session->tick() >= setup.lose_at;
      case Moment::late_arrived:
        if (late && !late_arrived && !all_of<net::event::StateReceived>(seen).empty()) late_arrived = now;
        return late_arrived && now - *late_arrived >= seconds(1);
      case Moment::delay_announced:
        return group[1].session->tick() >= 30 && std::ranges::any_of(all_of<net::event::InputDelayChanged>(seen),
                                   [&](const auto& e) { return e.from_tick > group[1].session->tick(); });
    }
    return false;
  };
  REQUIRE(group.run(seconds(120), [&](net::Instant now) {
    if (setup.late && !late && group[1].session->tick() >= 150) {
      late = group.join(net::Role::player, join_config(), setup.faults, walker_step);
      m.survivors.push_back(*late);
    }
    if (m.lost_at == net::Instant{0} && due(now)) {
      m.lost_at = now;
      if (setup.leave) group[0].session->leave(now);
      else if (setup.cut) group.network().cut(VirtualSessions<WalkerSim>::address(0), now, now + seconds(6), true);
      else group.kill(0);
    }
    if (setup.restart && !m.restarted && m.moved_at[3] != net::Instant{0}) {
      const net::PeerProtocol& peer = *group[3].session->peer_protocol();
      net::JoinConfig again = join_config();
      again.reclaim = group[3].session->reclaim();
      again.credential.host_key = peer.host_key();
      again.other_hosts = {peer.host()};
      group.kill(3);
      m.restarted = group.join(net::Role::player, again, setup.faults, walker_step);  // at the lost host first
      std::erase(m.survivors, std::size_t{3});
      m.survivors.push_back(*m.restarted);
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

/// Every survivor finished every tick on one hash, its recording (the players') the same bytes.
void check_survivors(const Migration& m, const testing::TempDir& dir) {
  const std::string recording = testing::read_file(dir.file("p3.lsr"));  // participant 3 always survives
  const std::map<std::uint64_t, std::uint64_t>& survivor = m.group[3].hashes;
  for (const std::size_t i : m.survivors) {
    INFO("participant " << i << ": " << m.group[i].session->result()->message);
    CHECK(m.group[i].session->result()->outcome == Outcome::finished);
    CHECK(m.group[i].session->tick() == k_ticks);
    if (i <= 3) CHECK(testing::read_file(dir.file("p" + std::to_string(i) + ".lsr")) == recording);
    // (A late player stepped from its state's tick on.)
    for (const auto& [tick, hash] : m.group[i].hashes) CHECK(survivor.at(tick) == hash);
  }
  // The lost host agrees with them as far as the first tick the successor decided (a host cut off
  // steps a few more of its own before it ends).
  const std::map<std::uint64_t, std::uint64_t>& lost = m.group[0].hashes;
  const std::vector<net::event::HostMigrated> moved = all_of<net::event::HostMigrated>(m.events[3]);
  REQUIRE_FALSE(moved.empty());
  const std::uint64_t handoff = moved.back().tick;
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
        REQUIRE(m.group[1].session->host_protocol() != nullptr);
        // It runs the session by the lost host's rules, which its plan carried.
        const net::HostRules rules = m.group[1].session->host_protocol()->rules();
        CHECK(rules == m.group[0].session->host_protocol()->rules());
        CHECK(rules == net::HostRules{false, 6, 900, 3000});
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
    // The handoff is checked before anyone steps on: a survivor's move is said once the new host
    // has compared its hash of the last tick it held, and no tick after that one is stepped before.
    for (std::size_t i = 2; i <= 3; ++i) {
      const std::uint64_t checked = all_of<net::event::HostMigrated>(m.events[i]).back().tick;
      CHECK(checked >= lose_at);
      CHECK(checked <= handoff);
      for (const auto& [at, tick] : m.steps[i]) {
        if (tick > checked) CHECK(at >= m.moved_at[i]);
      }
    }
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

TEST_CASE("a survivor diverged just before the host was lost is found by the handoff's check", "[net][session][migration]") {
  // Participant 3 steps once more after tick 201 (its hash of it differs), a tick it held but the
  // lost host never compared: the new host compares it at the handoff, before anyone steps on.
  testing::TempDir dir;
  Migration m;
  Setup setup{.lose_at = 200, .diverge_at = 201};
  SECTION("lockstep: the session ends on a desync at that tick") {
    lose_host(m, dir, setup);
    for (const std::size_t i : m.survivors) {
      INFO("participant " << i);
      const net::SessionResult& r = *m.group[i].session->result();
      CHECK(r.outcome == Outcome::desync);
      CHECK(r.desync_tick == 201);
    }
    // It did not step past the tick it held before the new host's answer: its move says which.
    const std::vector<net::event::HostMigrated> moved = all_of<net::event::HostMigrated>(m.events[3]);
    REQUIRE(moved.size() == 1);
    CHECK(moved[0].tick >= 201);
    CHECK(m.group[3].session->tick() <= moved[0].tick);
  }
  SECTION("--on-desync resync: it takes the new host's state and every survivor finishes on one hash") {
    setup.resync = true;
    lose_host(m, dir, setup);
    for (const std::size_t i : m.survivors) {
      INFO("participant " << i << ": " << m.group[i].session->result()->message);
      CHECK(m.group[i].session->result()->outcome == Outcome::finished);
      CHECK(m.group[i].hashes.rbegin()->second == m.group[1].hashes.rbegin()->second);
    }
    CHECK(all_of<net::event::Resynced>(m.events[3]).size() == 1);
    CHECK(all_of<net::event::HostMigrated>(m.events[3]).size() == 1);
  }
}

TEST_CASE("the host lost after a late player arrived, or during a delay change, and the survivors finish on one "
          "hash",
          "[net][session][migration]") {
  testing::TempDir dir;
  Migration m;
  Setup setup;
  SECTION("a late player that took its state a second before follows to the successor") {
    setup.late = true;
    setup.when = Moment::late_arrived;
    lose_host(m, dir, setup);
    check_survivors(m, dir);
    CHECK(m.group[m.survivors.back()].first_tick() > 150);
    CHECK(all_of<net::event::HostMigrated>(m.events[m.survivors.back()]).size() == 1);
  }
  SECTION("a delay change announced, not yet in force, over 40–80 ms links") {
    setup.adaptive = true;
    setup.when = Moment::delay_announced;
    setup.faults.delay_ms = 40;
    setup.faults.jitter_ms = 40;
    setup.faults.seed = 5;
    lose_host(m, dir, setup);
    check_survivors(m, dir);
    // The change reached every survivor, and each one stepped by it; the successor's delay adapts.
    for (const std::size_t i : m.survivors) CHECK_FALSE(all_of<net::event::InputDelayChanged>(m.events[i]).empty());
    // (Slots follow the joiners' arrival here: the successor is whichever took over.)
    const auto successor = std::ranges::find_if(m.survivors, [&](std::size_t i) { return m.group[i].session->host_protocol() != nullptr; });
    REQUIRE(successor != m.survivors.end());
    CHECK(m.group[*successor].session->host_protocol()->rules().adaptive_delay);
  }
  for (const std::size_t i : m.survivors) CHECK(all_of<net::event::HostMigrated>(m.events[i]).size() == 1);
}

TEST_CASE("the host lost while a late player's state is on its way, and the others finish without it",
          "[net][session][migration][late]") {
  // The arena's 300 bodies: a state of about 17 KB, many pieces, each link 20 ms each way.
  VirtualSessions<World> group;
  WorldConfig config = default_world_config(Scene::arena);
  config.players = 5;
  config.arena.bodies = 300;
  net::NetSimConfig slow;
  slow.delay_ms = 20;
  net::HostConfig host = host_config(k_ticks);
  host.start_with = 4;
  const auto bot = testing::world_bot;
  REQUIRE(group.host(config, 3, host, slow, bot()).ok());
  for (int i = 1; i <= 3; ++i) group.join(net::Role::player, join_config(), slow, bot());
  std::optional<std::size_t> late;
  std::vector<net::ProtocolEvent> late_events;
  bool killed = false;
  REQUIRE(group.run(seconds(120), [&](net::Instant) {
    if (!late && group[1].session->tick() >= 150) late = group.join(net::Role::player, join_config(), slow, bot());
    if (!late) return;
    for (net::ProtocolEvent e; group[*late].session->poll_event(e);) late_events.push_back(e);
    // Welcomed, its state not all in: the host dies mid-transfer.
    if (!killed && !all_of<net::event::Welcomed>(late_events).empty() && all_of<net::event::StateReceived>(late_events).empty()) {
      killed = true;
      group.kill(0);
    }
  }));
  REQUIRE(killed);
  // It holds no plan (a joiner gets one once it plays): it ends, and took no tick.
  CHECK(group[*late].session->result()->outcome == Outcome::network_failed);
  CHECK(group[*late].hashes.empty());
  for (std::size_t i = 1; i <= 3; ++i) {
    INFO("participant " << i << ": " << group[i].session->result()->message);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].session->result()->hash == group[3].session->result()->hash);
    CHECK(group[i].hashes == group[3].hashes);  // every tick, one hash
  }
  CHECK(group[3].hashes.size() == k_ticks);
}

TEST_CASE("a survivor killed after its move and started again with its reconnect key reclaims its slot at the successor",
          "[net][session][migration][reconnect]") {
  testing::TempDir dir;
  Migration m;
  lose_host(m, dir, {.restart = true});
  REQUIRE(m.restarted);
  // Told the lost host's address first (with the successor's after it, as from a key file written
  // after the move), it heard nothing there for the detection time and went on: the successor let
  // it in with the key it had given, under the lost host's key pair, which the reclaim pinned.
  const VirtualSessions<WalkerSim>::Participant& again = m.group[*m.restarted];
  INFO(again.session->result()->message);
  CHECK(again.session->result()->outcome == Outcome::finished);
  CHECK(again.session->result()->hash == m.group[2].session->result()->hash);
  CHECK(again.first_tick() > 200);
  CHECK(all_of<net::event::StateReceived>(m.events[*m.restarted]).size() == 1);
  for (const std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    CHECK(m.group[i].session->result()->outcome == Outcome::finished);
    CHECK(m.group[i].session->result()->hash == m.group[2].session->result()->hash);
  }
}
