// Sessions that survive real life, on virtual time: players joining a session under way, players
// reclaiming their slot after a crash, and desyncs recovered from the host's state.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/credentials/reconnect_key.hpp"
#include "lockstep/net/io/host_port.hpp"
#include "lockstep/net/session/session.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "process.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::net::VirtualSessions;
using lockstep::testing::WalkerInput;
using lockstep::testing::WalkerSim;
using net::Instant;
using net::Outcome;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

/// Never neutral: every tick of a player's own shows in the tick log.
WalkerInput busy_input(std::uint32_t slot, std::uint64_t tick) {
  return WalkerInput{static_cast<std::int8_t>((tick + slot) % 2 == 0 ? 1 : -1)};
}

/// The same input every tick (slot 0 right, slot 1 left, any other neutral): a predictor that
/// repeats the last input is never wrong.
WalkerInput steady_input(std::uint32_t slot, std::uint64_t) {
  return WalkerInput{static_cast<std::int8_t>(slot == 0 ? 1 : slot == 1 ? -1 : 0)};
}

/// The hash of the state `session` shows when it is a predicted one (ahead of its confirmed tick),
/// once per tick shown, as (tick, hash).
void note_predicted(const net::Session<WalkerSim>& session, std::vector<std::pair<std::uint64_t, std::uint64_t>>& shown) {
  if (!session.welcomed() || session.present_tick() <= session.tick()) return;
  if (!shown.empty() && shown.back().first == session.present_tick()) return;
  shown.emplace_back(session.present_tick(), canonical_hash(session.present_tick(), *session.state()));
}

std::vector<net::ProtocolEvent> events_of(VirtualSessions<WalkerSim>::Participant& p) {
  std::vector<net::ProtocolEvent> out;
  for (net::ProtocolEvent e; p.session->poll_event(e);) out.push_back(e);
  return out;
}

/// Slot `slot`'s input in the ticks the host assembled: neutral (0) from `neutral_from` until
/// `from`, its own from then on.
void check_plays_from(const net::TickLog& ticks, net::Slot slot, std::uint64_t neutral_from, std::uint64_t from) {
  for (std::uint64_t t = std::max(ticks.first_tick(), neutral_from); t <= ticks.known_through(); ++t) {
    const auto step = static_cast<std::int8_t>(std::to_integer<std::uint8_t>(ticks.inputs_of(t)[slot]));
    INFO("tick " << t);
    if (t < from) REQUIRE(step == 0);
    else REQUIRE(step == busy_input(slot, t).step);
  }
}

/// With prediction on (W > 0), what every player's statistics must show: it predicted, no
/// further than W, and rolled back (busy_input changes every tick, so a repeated input is always
/// a wrong guess).
void check_predicted(const net::NetStats& stats, std::uint32_t window) {
  INFO(net::stats_json(stats));
  CHECK(stats.prediction_window == window);
  CHECK(stats.prediction_max >= 1);
  CHECK(stats.prediction_max <= window);
  CHECK(stats.rollbacks > 0);
}

/// The network of a test that runs with and without prediction: with it, 40 ms each way, so that
/// every player runs ahead of what is confirmed (the fixed delay of 2 ticks covers less).
net::NetSimConfig predicting_network(net::NetSimConfig net, std::uint32_t window) {
  if (window > 0) net.delay_ms = std::max<std::uint32_t>(net.delay_ms, 40);
  return net;
}

}  // namespace

TEST_CASE("a third player joins a session of two under way at tick 600, through loss: it gets the state, "
          "plays from the tick the host announced, and everyone ends on one hash; with prediction too",
          "[net][session][late][prediction]") {
  VirtualSessions<WalkerSim> group;
  const std::uint32_t window = GENERATE(0u, 8u);
  INFO("host --rollback " << window);
  net::HostConfig host = host_config(1200);
  host.start_with = 2;
  host.prediction_window = window;
  net::NetSimConfig lossy;
  lossy.loss = 0.1;
  lossy.delay_ms = 15;
  lossy.jitter_ms = 5;
  lossy.seed = 1;
  lossy = predicting_network(lossy, window);
  REQUIRE(group.host({3, 1000}, 5, host, lossy, busy_input).ok());
  lossy.seed = 2;
  group.join(net::Role::player, join_config(), lossy, busy_input);
  std::optional<std::size_t> late;
  REQUIRE(group.run(seconds(60), [&](Instant) {
    if (!late && group[0].session->tick() >= 600) {
      lossy.seed = 3;
      late = group.join(net::Role::player, join_config(), lossy, busy_input);
    }
  }));
  REQUIRE(late);
  auto& third = group[*late];
  INFO(net::stats_json(third.session->stats()));
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].session->result()->tick == 1200);
    CHECK(group[i].session->result()->hash == group[0].session->result()->hash);
  }
  CHECK(group.agree());
  CHECK(third.session->parameters().slot == 2);
  CHECK(third.first_tick() > 600);
  // Every participant heard from which tick it plays: neutral for everyone until then, its own
  // inputs from then on.
  std::uint64_t plays_from = 0;
  for (const net::ProtocolEvent& e : events_of(group[1])) {
    if (const auto* joined = std::get_if<net::event::PlayerJoined>(&e); joined != nullptr && joined->slot == 2) {
      plays_from = joined->plays_from_tick;
    }
  }
  CHECK(plays_from > third.first_tick());
  CHECK(plays_from < third.first_tick() + 120);
  check_plays_from(group[0].session->protocol().ticks(), 2, 1, plays_from);
  const net::NetStats stats = third.session->stats();
  CHECK(stats.state_bytes > 0);
  REQUIRE(stats.caught_up_ms);
  // With prediction every participant predicts and rolls back, the late player too (that its
  // predicted copy starts from the state it received is the test of steady inputs below).
  if (window > 0) {
    for (std::size_t i = 0; i < group.size(); ++i) check_predicted(group[i].session->stats(), window);
  }
}

TEST_CASE("a player whose process died reclaims its slot with its key, before or after it was declared "
          "gone, and plays on to the same final hash; with prediction too",
          "[net][session][reconnect][prediction]") {
  VirtualSessions<WalkerSim> group;
  const std::uint32_t window = GENERATE(0u, 8u);
  net::HostConfig host = host_config(1200);
  host.prediction_window = window;
  // Every input of the slot is checked to be the player's own from the announced tick: the
  // tolerance would decide some while the player catches up (input_tolerance.tests.cpp).
  host.input_tolerance = 0;
  const net::NetSimConfig network = predicting_network({}, window);
  REQUIRE(group.host({3, 1000}, 5, host, network, busy_input).ok());
  group.join(net::Role::player, join_config(), network, busy_input);
  group.join(net::Role::player, join_config(), network, busy_input);
  // At once (the host still holds inputs the dead process sent for ticks after the state), within
  // the timeout, and after it.
  const milliseconds restart_after = GENERATE(milliseconds(0), milliseconds(500), milliseconds(4000));
  INFO("restarted " << restart_after.count() << " ms after the kill, host --rollback " << window);
  std::optional<net::Reclaim> key;
  Instant killed_at{0};
  std::optional<std::size_t> again;
  std::uint64_t plays_from = 0;
  REQUIRE(group.run(seconds(90), [&](Instant now) {
    for (net::ProtocolEvent e; group[0].session->poll_event(e);) {
      const auto* joined = std::get_if<net::event::PlayerJoined>(&e);
      if (joined != nullptr && joined->slot == 2 && joined->plays_from_tick != 0) plays_from = joined->plays_from_tick;
    }
    if (!key && group[2].session->tick() >= 400) {
      key = group[2].session->reclaim();
      group.kill(2);
      killed_at = now;
    }
    if (key && !again && now - killed_at >= restart_after) {
      net::JoinConfig j = join_config();
      j.reclaim = key;
      again = group.join(net::Role::player, j, network, busy_input);
    }
  }));
  REQUIRE(key);
  REQUIRE(again);
  CHECK(key->slot == 2);
  auto& back = group[*again];
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, *again}) {
    INFO("participant " << i);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].session->result()->hash == group[0].session->result()->hash);
  }
  CHECK(group.agree());
  CHECK(back.session->parameters().slot == 2);
  CHECK(back.first_tick() > 400);
  // The key is the same slot's, and it stays good for a later reconnect.
  CHECK(back.session->reclaim() == key);
  // It plays from the tick the host announced (the slot may be gone again at the very end, when the
  // player says goodbye after its last tick).
  REQUIRE(plays_from > back.first_tick());
  check_plays_from(group[0].session->protocol().ticks(), 2, plays_from - 1, plays_from);
  if (window > 0) {
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, *again}) check_predicted(group[i].session->stats(), window);
  }
}

TEST_CASE("a reconnect key is good for its own session and slot only", "[net][session][reconnect][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(600), {}, busy_input).ok());
  group.join(net::Role::player, join_config(), {}, busy_input);
  std::optional<net::Reclaim> key;
  std::vector<std::size_t> claims;
  const int which = GENERATE(0, 1, 2);
  REQUIRE(group.run(seconds(30), [&](Instant) {
    if (!key && group[1].session->tick() >= 100) {
      key = group[1].session->reclaim();
      REQUIRE(key);
      net::Reclaim forged = *key;
      if (which == 0) forged.key ^= 1;       // a guess
      if (which == 1) forged.session ^= 1;   // another session's
      if (which == 2) forged.slot = 0;       // the host's own slot
      net::JoinConfig j = join_config();
      j.reclaim = forged;
      claims.push_back(group.join(net::Role::player, j, {}, busy_input));
    }
  }));
  REQUIRE(claims.size() == 1);
  const net::SessionResult& refused = *group[claims[0]].session->result();
  CHECK(refused.outcome == Outcome::refused);
  CHECK(refused.message == "refused by the host: the reconnect key is not for a slot of this session");
  // The holder of the slot played on undisturbed.
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  CHECK(group[1].session->result()->hash == group[0].session->result()->hash);
}

TEST_CASE("resyncing: a perturbed player gets the host's state and goes on, every participant sends its "
          "evidence to the host's bundle, and all end on one hash; with prediction too, every player predicting and rolling back",
          "[net][session][resync][prediction]") {
  lockstep::testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  const std::uint32_t window = GENERATE(0u, 8u);
  net::HostConfig host = host_config(900);
  host.resync = true;
  host.evidence_dir = dir.path();
  host.record = dir.file("host.lsr");
  host.prediction_window = window;
  const net::NetSimConfig network = predicting_network({}, window);
  REQUIRE(group.host({3, 1000}, 5, host, network, busy_input).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  group.join(net::Role::player, join, network, busy_input);
  join.record = dir.file("perturbed.lsr");
  group.join(net::Role::player, join, network, busy_input);
  join.record.clear();
  group.join(net::Role::spectator, join, network);
  const auto nudge = [](WalkerSim& sim) {
    std::vector<WalkerInput> push = {WalkerInput{1}, WalkerInput{1}, WalkerInput{1}};
    (void)sim.step(push);  // one extra step: a state no one else has
  };
  group[2].session->debug_perturb(300, nudge);
  const bool again = GENERATE(false, true);
  INFO("host --rollback " << window << (again ? ", diverging again after the resync" : ""));
  bool perturbed_again = false;
  std::vector<std::vector<net::ProtocolEvent>> events(group.size());
  REQUIRE(group.run(seconds(60), [&](Instant) {
    for (std::size_t i = 0; i < group.size(); ++i) {
      for (net::ProtocolEvent e; group[i].session->poll_event(e);) events[i].push_back(e);
    }
    // Diverging again soon after a resync: dropped, not resynced forever.
    if (again && !perturbed_again && group[2].session->stats().resync_bytes > 0) {
      group[2].session->debug_perturb(group[2].session->tick() + 30, nudge);
      perturbed_again = true;
    }
  }));
  const auto has = [&]<class E>(std::size_t i, E) {
    return std::any_of(events[i].begin(), events[i].end(), [&](const net::ProtocolEvent& e) { return net::is<E>(e); });
  };
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i);
    const net::SessionResult& r = *group[i].session->result();
    if (again && i == 2) {
      CHECK(r.outcome == Outcome::network_failed);
      continue;
    }
    CHECK(r.outcome == Outcome::finished);
    CHECK(r.tick == 900);
    CHECK(r.hash == group[0].session->result()->hash);
    // Everyone sent its evidence of tick 300 to the host, which wrote the bundle, and went on.
    const auto recorded = std::find_if(events[i].begin(), events[i].end(),
                                       [](const net::ProtocolEvent& e) { return net::is<net::event::DesyncRecorded>(e); });
    REQUIRE(recorded != events[i].end());
    const auto& desync = std::get<net::event::DesyncRecorded>(*recorded);
    CHECK(desync.tick == 300);
    if (i > 0) {
      CHECK(desync.evidence == "sending it to the host, which writes the bundle");
      continue;
    }
    // The bundle holds everyone's, the perturbed player's of its own state before it went back.
    Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(desync.evidence);
    REQUIRE(bundle.ok());
    CHECK(bundle->desync_tick == 300);
    REQUIRE(bundle->participants.size() == 4);
    const std::uint64_t host_hash = bundle->participants[0].desync_hash.value().value;
    for (const replay::BundleParticipant& p : bundle->participants) {
      INFO(replay::participant_name(p) << ": " << p.missing);
      REQUIRE(p.present());
      const bool perturbed = p.role == replay::ParticipantRole::player && p.slot == 2;
      CHECK((p.desync_hash->value != host_hash) == perturbed);
    }
  }
  CHECK(has(0, net::event::Diverged{}));
  CHECK(has(2, net::event::Resynced{}));
  CHECK(has(0, net::event::DivergedAgain{}) == again);
  const net::NetStats stats = group[2].session->stats();
  CHECK(stats.resync_bytes > 0);
  REQUIRE(stats.resync_ms);
  if (!again) {
    CHECK(group.agree());  // the perturbed player's hashes from 300 until its resync are forgotten
    // Its recording starts again from the host's state; what it recorded before is kept beside it.
    CHECK(std::filesystem::exists(dir.file("perturbed.before-resync-at-300.lsr")));
    if (window > 0) {
      for (std::size_t i = 0; i < 3; ++i) check_predicted(group[i].session->stats(), window);
      // The spectator stays pure lockstep.
      CHECK(group[3].session->stats().rollbacks == 0);
      CHECK(group[3].session->stats().prediction_max == 0);
    }
  }
}

TEST_CASE("resyncing a world of 300 bodies: its state crosses in many pieces through 10% loss",
          "[net][session][resync]") {
  VirtualSessions<World> group;
  WorldConfig config = default_world_config(Scene::arena);
  config.players = 3;
  config.arena.bodies = 300;
  net::NetSimConfig lossy;
  lossy.loss = 0.1;
  lossy.delay_ms = 10;
  lossy.jitter_ms = 5;
  const auto bot = testing::world_bot;
  net::HostConfig host = host_config(600);
  host.resync = true;
  lockstep::testing::TempDir dir;
  host.evidence_dir = dir.path();
  lossy.seed = 1;
  REQUIRE(group.host(config, 3, host, lossy, bot()).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  for (const std::uint64_t seed : {std::uint64_t{2}, std::uint64_t{3}}) {
    lossy.seed = seed;
    group.join(net::Role::player, join, lossy, bot());
  }
  group[2].session->debug_perturb(200, [](World& world) {
    const Vec2 v = world.velocity(BodyId{1});
    world.set_velocity(BodyId{1}, {v.x + 1e-6, v.y});
  });
  REQUIRE(group.run(seconds(60)));
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i << ": " << net::stats_json(group[i].session->stats()));
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].session->result()->hash == group[0].session->result()->hash);
  }
  const net::NetStats stats = group[2].session->stats();
  CHECK(stats.desyncs == 1);
  CHECK(stats.resync_bytes > 10 * net::k_state_piece_bytes);
}

TEST_CASE("a long session holds a bounded window of ticks, and a desync late in it still leaves evidence "
          "that re-simulates from a kept state to the desync tick",
          "[net][session][memory]") {
  lockstep::testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(9000);
  host.evidence_dir = dir.path();
  REQUIRE(group.host({3, 1000}, 5, host, {}, busy_input).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  group.join(net::Role::player, join, {}, busy_input);
  group.join(net::Role::player, join, {}, busy_input);
  group[2].session->debug_perturb(8500, [](WalkerSim& sim) {
    std::vector<WalkerInput> push = {WalkerInput{1}, WalkerInput{1}, WalkerInput{1}};
    (void)sim.step(push);
  });
  std::uint64_t most_held = 0;
  REQUIRE(group.run(seconds(400), [&](Instant) {
    for (std::size_t i = 0; i < group.size(); ++i) {
      const net::TickLog& ticks = group[i].session->protocol().ticks();
      if (ticks.known_through() >= ticks.first_tick()) {
        most_held = std::max(most_held, ticks.known_through() - ticks.first_tick() + 1);
      }
    }
  }));
  // Between one and two windows of ticks (and what is in flight), never the session's 8,500.
  CHECK(most_held <= 2 * net::k_tick_window + 64);
  CHECK(group[0].session->protocol().ticks().first_tick() > 4000);
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i);
    const net::SessionResult& r = *group[i].session->result();
    CHECK(r.outcome == Outcome::desync);
    CHECK(r.desync_tick == 8500);
  }
  // Everyone's evidence replay, in the host's bundle, starts from the state kept at tick 8,192
  // and verifies to the desync.
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(group[0].session->result()->evidence);
  REQUIRE(bundle.ok());
  REQUIRE(bundle->participants.size() == 3);
  for (const replay::BundleParticipant& p : bundle->participants) {
    INFO(replay::participant_name(p) << ": " << p.missing);
    REQUIRE(p.present());
    Result<replay::ReplayFile> file = replay::parse_replay(p.replay);
    REQUIRE(file.ok());
    Result<replay::Player<WalkerSim>> player = replay::Player<WalkerSim>::open(std::move(file).value(), false);
    REQUIRE(player.ok());
    CHECK(player->runner().tick() == 4 * net::k_tick_window);
    Result<replay::PlayOutcome> outcome = player->play_to(8500);
    REQUIRE(outcome.ok());
    CHECK_FALSE(outcome->desync.has_value());
    CHECK(outcome->ticks_stepped == 8500 - 4 * net::k_tick_window);
  }
}

TEST_CASE("a reconnect key file is written whole and read back exactly, with where to find the session, and "
          "anything else is refused in one line",
          "[net][reconnect][hostile]") {
  lockstep::testing::TempDir dir;
  const std::string path = dir.file("player.key");
  net::PublicKey host_key{};
  for (std::size_t i = 0; i < host_key.size(); ++i) host_key[i] = static_cast<std::byte>(i * 9);
  const net::ReconnectKey key{{0x0123456789ABCDEFull, 7, 0xFEDCBA9876543210ull}, host_key, *net::parse_host_port("[::1]:40002")};
  REQUIRE(net::write_reconnect_key(path, key).ok());
  CHECK(lockstep::testing::read_file(path) ==
        "lockstep reconnect key 2\nsession 0123456789abcdef\nslot 7\nkey fedcba9876543210\n"
        "host-key 0009121b242d363f48515a636c757e879099a2abb4bdc6cfd8e1eaf3fc050e17\nhost [::1]:40002\n");
  CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::others_read) == std::filesystem::perms::none);
  Result<net::ReconnectKey> back = net::read_reconnect_key(path);
  REQUIRE(back.ok());
  CHECK(back.value() == key);
  const std::string good = lockstep::testing::read_file(path);
  const std::string four = good.substr(0, good.find("host-key "));  // the key's own four lines
  const std::string key_line = good.substr(four.size(), 74);         // "host-key <64 hex>\n"
  // Version 1, the four lines alone, is read too (and written for a key with no host): no host.
  std::ofstream(path, std::ios::trunc) << "lockstep reconnect key 1\n" + four.substr(25);
  back = net::read_reconnect_key(path);
  REQUIRE(back.ok());
  CHECK(back->reclaim == key.reclaim);
  CHECK_FALSE(back->host);
  CHECK_FALSE(back->host_key);
  REQUIRE(net::write_reconnect_key(path, {key.reclaim, std::nullopt, std::nullopt}).ok());
  CHECK(lockstep::testing::read_file(path) == "lockstep reconnect key 1\n" + four.substr(25));
  CHECK_FALSE(net::write_reconnect_key(path, {key.reclaim, host_key, std::nullopt}).ok());  // a key without its host
  const auto refused = [&](const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
    const Result<net::ReconnectKey> r = net::read_reconnect_key(path);
    return !r.ok() && r.error().message == "'" + path + "' is not a lockstep reconnect key";
  };
  CHECK(refused(""));
  CHECK(refused(good.substr(0, good.size() - 1)));                   // the last newline cut
  CHECK(refused(good.substr(0, 40)));                                // truncated
  CHECK(refused(good + "host 10.0.0.1:7777\n"));                     // a seventh line
  CHECK(refused(four + key_line));                                   // a host key without its host
  CHECK(refused(four + key_line + "host 10.0.0.1\n"));               // no port
  CHECK(refused(four + key_line + "host nowhere:7777\n"));           // a name, not an address: never looked up
  CHECK(refused(four + "host-key 00\nhost 10.0.0.1:7777\n"));        // a host key too short
  CHECK(refused(four + key_line.substr(0, 9) + std::string(64, 'G') + "\nhost 10.0.0.1:7777\n"));  // not hex
  CHECK(refused("lockstep reconnect key 1\n" + good.substr(25)));    // version 1 has no host
  CHECK(refused("lockstep reconnect key 3\n" + good.substr(25)));    // another version
  CHECK(refused(good.substr(0, 25) + "session 0123456789ABCDEF\nslot 7\nkey fedcba9876543210\n"));  // not lowercase
  CHECK(refused(good.substr(0, 25) + "session 0123456789abcde\nslot 7\nkey fedcba9876543210\n"));   // 15 digits
  CHECK(refused(good.substr(0, 50) + "slot 256\nkey fedcba9876543210\n"));  // no such slot
  CHECK(refused(good.substr(0, 50) + "slot -1\nkey fedcba9876543210\n"));
  CHECK(refused(good.substr(0, 50) + "slot 99999999999999999999\nkey fedcba9876543210\n"));
  CHECK(refused(good.substr(0, 50) + "slot 7\nkey 0000000000000000\n"));    // no key
  CHECK(refused(std::string(1024, 'x')));
  // Larger than any key file, a folder, nothing: the file reader's own one-line errors.
  std::ofstream(path, std::ios::trunc) << std::string(2000, 'x');
  CHECK_FALSE(net::read_reconnect_key(path).ok());
  CHECK_FALSE(net::read_reconnect_key(dir.path()).ok());
  CHECK_FALSE(net::read_reconnect_key(dir.file("none")).ok());
  // A key cannot be written where no file can be.
  CHECK_FALSE(net::write_reconnect_key(dir.file("no/such/folder/player.key"), key).ok());
}

TEST_CASE("a slot reclaimed again and again does not run the host out of connection ids",
          "[net][session][reconnect][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(1'000'000), {}, busy_input).ok());
  group.join(net::Role::player, join_config(), {}, busy_input);
  std::size_t current = 1;
  int reclaims = 0;
  constexpr int k_reclaims = 300;  // more than there are connection ids
  REQUIRE(group.run(seconds(3600), [&](Instant now) {
    const auto& p = group[current];
    const bool playing = p.session->tick() > 0 && (current == 1 || p.session->stats().playing_ms.has_value());
    if (!playing) return;
    if (reclaims == k_reclaims) {
      if (!group[0].session->ended()) group[0].session->leave(now);
      return;
    }
    // The holder, once it plays, dies and a new process with its key takes the slot back.
    const std::optional<net::Reclaim> key = p.session->reclaim();
    REQUIRE(key);
    group.kill(current);
    net::JoinConfig j = join_config();
    j.reclaim = key;
    current = group.join(net::Role::player, j, {}, busy_input);
    ++reclaims;
  }));
  CHECK(reclaims == k_reclaims);
  CHECK(group[current].session->stats().playing_ms.has_value());
  CHECK(group.agree());
}

TEST_CASE("a late player's and a resynced player's predicted copies start from the state each received: with inputs "
          "a predictor cannot get wrong, every predicted state shown is the host's state of that tick",
          "[net][session][late][resync][prediction]") {
  const bool resync = GENERATE(false, true);
  INFO((resync ? "resynced at tick 300" : "joined at tick 300"));
  // A resync leaves every participant's evidence of the desync: here, not in the folder the tests
  // run in.
  lockstep::testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(900);
  host.prediction_window = 8;
  host.resync = resync;
  host.evidence_dir = dir.path();
  if (!resync) host.start_with = 2;
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  const net::NetSimConfig network = predicting_network({}, 8);
  REQUIRE(group.host({3, 1000}, 5, host, network, steady_input).ok());
  group.join(net::Role::player, join, network, steady_input);
  std::optional<std::size_t> watched;
  if (resync) {
    watched = group.join(net::Role::player, join, network, steady_input);
    group[*watched].session->debug_perturb(300, [](WalkerSim& sim) {
      std::vector<WalkerInput> push = {WalkerInput{1}, WalkerInput{1}, WalkerInput{1}};
      (void)sim.step(push);  // one extra step: a state no one else has
    });
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> shown;
  std::optional<std::uint64_t> rollbacks_before;  // when the state was received
  REQUIRE(group.run(seconds(60), [&](Instant) {
    if (!watched && group[0].session->tick() >= 300) {
      watched = group.join(net::Role::player, join, network, steady_input);
    }
    // From the state received on (a resynced player's predictions before it are of its own
    // diverged state, which the host never had).
    if (!watched || (resync && group[*watched].session->resyncs() == 0)) return;
    if (!rollbacks_before) rollbacks_before = group[*watched].session->stats().rollbacks;
    note_predicted(*group[*watched].session, shown);
  }));
  REQUIRE(watched);
  const auto& host_side = group[0];
  INFO(shown.size() << " predicted states shown");
  REQUIRE(shown.size() >= 100);
  CHECK(shown.front().first > 300);
  for (const auto& [tick, hash] : shown) {
    INFO("tick " << tick);
    REQUIRE(host_side.hashes.count(tick) == 1);
    CHECK(hash == host_side.hashes.at(tick));
  }
  REQUIRE(rollbacks_before);
  CHECK(group[*watched].session->stats().rollbacks == *rollbacks_before);  // never wrong since, so never rolled back
  for (std::size_t i = 0; i < group.size(); ++i) CHECK(group[i].session->result()->hash == group[0].session->result()->hash);
}
