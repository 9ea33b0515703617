// Whole networked sessions in one process, on the in-memory network and virtual time: a program's
// own loop, the handshake's checks, the attacks and accidents the protocol must survive, and the
// wire's size. Each case names a behaviour that an earlier network layer got wrong.

#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <regex>
#include <string>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/io/virtual_network.hpp"
#include "lockstep/net/wire/wire.hpp"
#include "hand_joiner.hpp"
#include "process.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::HandJoiner;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::net::VirtualSessions;
using lockstep::testing::WalkerConfig;
using lockstep::testing::WalkerInput;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerSim;
using net::Instant;
using net::Outcome;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

/// The same simulation under another name, compatibility id, or configuration rule.
struct RenamedWalkers : WalkerSim {
  static constexpr std::string_view k_name = "lockstep.test.other";
  static Result<RenamedWalkers> create(const WalkerConfig& c, std::uint64_t seed) {
    Result<WalkerSim> w = WalkerSim::create(c, seed);
    if (!w) return w.error();
    RenamedWalkers r;
    static_cast<WalkerSim&>(r) = w.value();
    return r;
  }
};
struct WalkersV2 : WalkerSim {
  static std::uint64_t compatibility_id() { return 2; }
  static Result<WalkersV2> create(const WalkerConfig& c, std::uint64_t seed) {
    Result<WalkerSim> w = WalkerSim::create(c, seed);
    if (!w) return w.error();
    WalkersV2 r;
    static_cast<WalkerSim&>(r) = w.value();
    return r;
  }
};
struct BigRingWalkers : WalkerSim {
  static Result<BigRingWalkers> create(const WalkerConfig& c, std::uint64_t seed) {
    if (c.ring < 5000) return fail("this build wants a ring of at least 5000 places");
    Result<WalkerSim> w = WalkerSim::create(c, seed);
    if (!w) return w.error();
    BigRingWalkers r;
    static_cast<WalkerSim&>(r) = w.value();
    return r;
  }
};

/// A raw socket that speaks the protocol by hand.
struct RawJoiner {
  std::unique_ptr<net::VirtualSocket> socket;
  std::vector<std::vector<std::byte>> received;
  void send(const std::vector<std::byte>& d) { socket->send(VirtualSessions<WalkerSim>::address(0), d); }
  void drain() {
    net::Endpoint from;
    std::vector<std::byte> d;
    while (socket->receive(from, d)) received.push_back(d);
  }
};

}  // namespace

TEST_CASE("a program runs a networked session from its own loop and reads the state between ticks",
          "[net][session][loop]") {
  // The loop of docs/NETWORK.md, written out: no helper drives it.
  net::VirtualNetwork network;
  const net::Endpoint host_at = VirtualSessions<WalkerSim>::address(0);
  auto host_socket = network.open(host_at, {});
  auto peer_socket = network.open(VirtualSessions<WalkerSim>::address(1), {});
  Result<net::Session<WalkerSim>> host = net::Session<WalkerSim>::host({2, 101}, 77, host_config(150), Instant{0});
  REQUIRE(host.ok());
  net::JoinConfig join = join_config();
  join.host = host_at;
  join.nonce = 42;
  net::Session<WalkerSim> peer = net::Session<WalkerSim>::join(join, Instant{0}).value();

  // The peer re-simulates every tick it is given from the inputs alone, and compares the state it
  // reads from the session between ticks.
  std::optional<WalkerSim> shadow;
  std::uint64_t checked = 0;
  double lowest_alpha = 1.0;
  double highest_alpha = 0.0;
  std::vector<std::byte> datagram;
  net::Endpoint from;
  for (Instant now{0}; now < seconds(10) && !(host->ended() && peer.ended()); now += milliseconds(4)) {
    network.advance_to(now);
    for (auto [session, socket] : {std::pair{&host.value(), host_socket.get()}, std::pair{&peer, peer_socket.get()}}) {
      while (socket->receive(from, datagram)) session->receive(from, datagram, now);
      session->update(now);
      for (;;) {
        while (const std::optional<std::uint64_t> tick = session->input_wanted()) {
          session->add_local_input(walker_step(session->parameters().slot, *tick));
        }
        if (!session->step_ready()) break;
        REQUIRE(session->step().ok());
        if (session != &peer) continue;
        if (!shadow) shadow = WalkerSim::create({2, 101}, 77).value();
        std::vector<WalkerInput> inputs(2);
        const std::span<const std::byte> raw = peer.protocol().ticks().inputs_of(peer.tick());
        for (std::size_t p = 0; p < 2; ++p) inputs[p] = *WalkerInput::from_bytes(std::span<const std::byte, 1>(raw.data() + p, 1));
        REQUIRE(shadow->step(inputs).ok());
        REQUIRE(peer.state() != nullptr);
        CHECK(peer.state()->position(0) == shadow->position(0));
        CHECK(peer.state()->position(1) == shadow->position(1));
        ++checked;
      }
      session->send_all(*socket);
      if (session == &peer && peer.tick() > 0 && !peer.ended()) {
        lowest_alpha = std::min(lowest_alpha, peer.alpha());
        highest_alpha = std::max(highest_alpha, peer.alpha());
      }
    }
  }
  REQUIRE(host->ended());
  REQUIRE(peer.ended());
  CHECK(host->result()->outcome == Outcome::finished);
  CHECK(peer.result()->outcome == Outcome::finished);
  CHECK(checked == 150);
  CHECK(peer.result()->hash == host->result()->hash);
  CHECK(lowest_alpha >= 0.0);
  CHECK(highest_alpha < 1.0);
  CHECK(highest_alpha > lowest_alpha);  // the display really falls between ticks
}

TEST_CASE("a host, players and a spectator agree through loss, duplication, reordering and delay",
          "[net][session]") {
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig bad;
  bad.loss = 0.2;
  bad.duplicate = 0.1;
  bad.reorder = 0.1;
  bad.delay_ms = 40;
  bad.jitter_ms = 20;
  REQUIRE(group.host({3, 1000}, 5, host_config(600, 6), bad, walker_step).ok());
  for (std::uint64_t i = 1; i <= 3; ++i) {
    bad.seed = i + 1;
    group.join(i <= 2 ? net::Role::player : net::Role::spectator, join_config(), bad, walker_step);
  }
  REQUIRE(group.run(seconds(60)));
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i << ": " << group[i].session->result()->message);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].hashes.size() == 600);
  }
  CHECK(group.agree());
}

TEST_CASE("a joiner's handshake takes two round trips: its statistics say how long from its first hello to its welcome",
          "[net][session]") {
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig far;
  far.delay_ms = 25;  // each way, on what each side sends: a round trip of 50 ms
  REQUIRE(group.host({2, 1000}, 5, host_config(30), far, walker_step).ok());
  group.join(net::Role::player, join_config(), far, walker_step);
  REQUIRE(group.run(seconds(30)));
  CHECK_FALSE(group[0].session->stats().welcomed_ms.has_value());  // the host joins nobody
  const std::optional<double> welcomed = group[1].session->stats().welcomed_ms;
  REQUIRE(welcomed.has_value());
  CHECK(*welcomed >= 100.0);  // hello, challenge, connect, welcome: 4 × 25 ms
  CHECK(*welcomed < 110.0);   // and little more: nothing waits for a timer
  CHECK_THAT(net::stats_json(group[1].session->stats()), Catch::Contains("\"welcomed_ms\": " + std::to_string(*welcomed).substr(0, 5)));
}

TEST_CASE("an adaptive input delay keeps players through 60 ± 20 ms each way to under 1% stall ticks, "
          "and every participant learns each change for the same tick",
          "[net][session][delay]") {
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig slow;
  slow.delay_ms = 40;  // 40 to 80 ms each way
  slow.jitter_ms = 40;
  net::HostConfig host = host_config(2000, 2);
  host.adaptive_delay = true;
  slow.seed = 1;
  REQUIRE(group.host({3, 1000}, 5, host, slow, walker_step).ok());
  for (std::uint64_t i = 1; i <= 2; ++i) {
    slow.seed = i + 1;
    group.join(net::Role::player, join_config(), slow, walker_step);
  }
  REQUIRE(group.run(seconds(120)));
  const std::vector<net::DelayChange> changes = group[0].session->stats().delay_changes;
  REQUIRE_FALSE(changes.empty());
  // A round trip of 80 to 160 ms is 5 to 10 ticks at 60 Hz: the delay the host settles on covers it.
  CHECK(changes.back().delay >= 8);
  CHECK(changes.back().delay <= 14);
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i);
    const net::NetStats stats = group[i].session->stats();
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].hashes.size() == 2000);
    CHECK(stats.stall_ticks * 100 <= 2000);  // at most 1%
    CHECK(stats.delay_changes.back() == changes.back());
  }
  CHECK(group.agree());
}

TEST_CASE("a spectator joining a session under way starts from the host's state, not the history, "
          "through loss, and agrees to the end",
          "[net][session][late]") {
  VirtualSessions<World> group;
  WorldConfig config = default_world_config(Scene::arena);
  config.players = 2;
  config.arena.bodies = 300;  // a state of about 17 KB: many pieces
  net::NetSimConfig lossy;
  lossy.loss = 0.2;
  lossy.delay_ms = 20;
  lossy.jitter_ms = 10;
  lossy.seed = 1;
  const auto bot = testing::world_bot;
  REQUIRE(group.host(config, 3, host_config(600, 4), lossy, bot()).ok());
  lossy.seed = 2;
  group.join(net::Role::player, join_config(), lossy, bot());
  std::optional<std::size_t> late;
  REQUIRE(group.run(seconds(120), [&](net::Instant) {
    if (!late && group[0].session->tick() >= 300) {
      lossy.seed = 3;
      late = group.join(net::Role::spectator, join_config(), lossy);
    }
  }));
  REQUIRE(late);
  const auto& spectator = group[*late];
  const net::NetStats stats = spectator.session->stats();
  INFO(net::stats_json(stats));
  CHECK(spectator.session->result()->outcome == Outcome::finished);
  CHECK(spectator.session->result()->hash == group[0].session->result()->hash);
  // It stepped from the state's tick on, never from tick 1, and says how long joining took.
  CHECK(spectator.first_tick() > 300);
  CHECK(spectator.first_tick() + spectator.hashes.size() == 601);
  CHECK(spectator.hashes.rbegin()->first == 600);
  CHECK(stats.state_bytes > 10 * net::k_state_piece_bytes);
  REQUIRE(stats.state_ms);
  REQUIRE(stats.caught_up_ms);
  CHECK(*stats.caught_up_ms >= *stats.state_ms);
  CHECK(group[0].session->stats().state_bytes == stats.state_bytes);
  CHECK(group.agree());
}

TEST_CASE("a state piece that does not match its checksum is dropped and counted, and a state over "
          "the joiner's bound is refused",
          "[net][session][late][hostile]") {
  std::vector<std::byte> piece(100, std::byte{7});
  std::vector<std::byte> d;
  net::write_state(d, {net::MessageType::state, 1, 1}, {0, net::state_piece_checksum(piece), piece});
  CHECK(net::read_state(d).ok());
  d.back() = std::byte{8};
  CHECK(net::read_state(d).drop == net::DropReason::bad_checksum);
  // A welcome announcing a state over the joiner's bound: refused in its own words.
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(300), {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  std::optional<std::size_t> late;
  REQUIRE(group.run(seconds(20), [&](Instant) {
    if (!late && group[1].session->tick() >= 60) {
      net::JoinConfig small = join_config();
      small.max_state_bytes = 1;
      late = group.join(net::Role::spectator, small);
    }
  }));
  REQUIRE(late.has_value());
  CHECK(group[*late].session->result()->outcome == Outcome::refused);
  CHECK(std::regex_match(group[*late].session->result()->message,
                         std::regex("the host's state is [0-9]+ bytes, over this program's bound of 1")));
  CHECK(group[0].session->result()->outcome == Outcome::finished);
}

TEST_CASE("the tick rate travels in the welcome and every participant paces by it", "[net][session]") {
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(60);
  host.tick_rate_hz = 20;
  REQUIRE(group.host({2, 1000}, 5, host, {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  Instant peer_finished{0};
  REQUIRE(group.run(seconds(30), [&](Instant now) {
    if (group[1].session->ended() && peer_finished == Instant{0}) peer_finished = now;
  }));
  CHECK(group[1].session->parameters().tick_rate_hz == 20);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  // 60 ticks at 20 Hz take three seconds after the half-second countdown, not one.
  CHECK(peer_finished >= milliseconds(3400));
  CHECK(peer_finished < milliseconds(4500));
}

TEST_CASE("a joiner of another simulation is refused on its own side with the reason, and frees the slot",
          "[net][session][handshake]") {
  auto refused = [](auto joiner_tag, const char* why) {
    using Joiner = typename decltype(joiner_tag)::type;
    net::VirtualNetwork network;
    auto host_socket = network.open(VirtualSessions<WalkerSim>::address(0), {});
    auto peer_socket = network.open(VirtualSessions<WalkerSim>::address(1), {});
    Result<net::Session<WalkerSim>> host = net::Session<WalkerSim>::host({2, 1000}, 5, host_config(100), Instant{0});
    REQUIRE(host.ok());
    net::JoinConfig join = join_config();
    join.host = VirtualSessions<WalkerSim>::address(0);
    join.nonce = 9;
    net::Session<Joiner> peer = net::Session<Joiner>::join(join, Instant{0}).value();
    bool slot_freed = false;
    for (Instant now{0}; now < seconds(2) && !peer.ended(); now += milliseconds(5)) {
      network.advance_to(now);
      host->run_frame(*host_socket, now, [](std::uint64_t) { return WalkerInput{}; }, [] {});
      peer.run_frame(*peer_socket, now, [](std::uint64_t) { return typename Joiner::Input{}; }, [] {});
      for (net::ProtocolEvent e; host->poll_event(e);) {
        const auto* left = std::get_if<net::event::LeftBeforeStart>(&e);
        slot_freed |= left != nullptr && left->by_goodbye;
      }
    }
    const Instant settled = network.now() + milliseconds(100);
    for (Instant now = network.now(); now < settled; now += milliseconds(5)) {
      network.advance_to(now);
      host->run_frame(*host_socket, now, [](std::uint64_t) { return WalkerInput{}; }, [] {});
      for (net::ProtocolEvent e; host->poll_event(e);) {
        const auto* left = std::get_if<net::event::LeftBeforeStart>(&e);
        slot_freed |= left != nullptr && left->by_goodbye;
      }
    }
    REQUIRE(peer.ended());
    CHECK(peer.result()->outcome == Outcome::refused);
    CHECK_THAT(peer.result()->message, Catch::Contains(why));
    CHECK(slot_freed);
    CHECK(host->protocol().slots()[1].state == net::SlotState::waiting);
    CHECK_FALSE(host->protocol().start_time().has_value());  // nothing starts: no "desync" later
  };
  SECTION("another simulation") {
    refused(std::type_identity<World>{}, "the host runs the simulation 'lockstep.test.walkers', this program 'lockstep.world2d'");
  }
  SECTION("another name") { refused(std::type_identity<RenamedWalkers>{}, "this program 'lockstep.test.other'"); }
  SECTION("another compatibility id") {
    refused(std::type_identity<WalkersV2>{}, "has compatibility id 0000000000000001, this program's 0000000000000002");
  }
  SECTION("a configuration this build rejects") {
    refused(std::type_identity<BigRingWalkers>{}, "does not fit this program: this build wants a ring of at least 5000");
  }
}

TEST_CASE("before the cookie returns, no answer is larger than the datagram that asked for it", "[net][session][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(100)).ok());
  RawJoiner raw{group.network().open(VirtualSessions<WalkerSim>::address(9), {}), {}};
  HandJoiner joiner(77);
  const std::vector<std::byte> hello = joiner.hello();
  std::vector<std::byte> refusal;
  net::write_version_refusal(refusal);
  // One datagram at a time, the network run on until the host has long answered it: whatever
  // arrives then answers that datagram and no other, so each answer is weighed against its own
  // request (not against the largest request sent).
  const auto answers_to = [&](const std::vector<std::byte>& datagram) {
    raw.received.clear();
    raw.send(datagram);
    group.run(group.network().now() + milliseconds(20));
    raw.drain();
    INFO("asked with " << datagram.size() << " bytes");
    CHECK(raw.received.size() <= 1);
    for (const std::vector<std::byte>& answer : raw.received) CHECK(answer.size() <= datagram.size());
    return raw.received;
  };
  const auto is_challenge = [](const std::vector<std::byte>& answer) {
    const net::Decoded<net::Header> h = net::read_header(answer);
    return h.ok() && h->type == net::MessageType::challenge;
  };

  // Hellos of another version at every length: a version refusal answers exactly those at least
  // as large as the refusal, and nothing else answers any of them.
  std::size_t headers = 0;
  std::size_t shorts = 0;
  for (std::size_t n = 4; n <= hello.size(); ++n) {
    std::vector<std::byte> other(hello.begin(), hello.begin() + static_cast<long>(n));
    other[2] = std::byte{net::k_protocol_version + 1};  // the next protocol version
    INFO(n << " bytes of a hello of the next version");
    const std::vector<std::vector<std::byte>> answers = answers_to(other);
    CHECK(answers.size() == (n >= refusal.size() ? 1u : 0u));
    for (const std::vector<std::byte>& answer : answers) {
      CHECK(answer == refusal);
      CHECK(net::read_refuse(answer)->reason == net::RefuseReason::version);
    }
    ++(n >= net::k_header_bytes ? headers : shorts);
  }
  CHECK(group[0].session->protocol().drops()[net::DropReason::bad_version] == headers);
  CHECK(group[0].session->protocol().drops()[net::DropReason::short_datagram] == shorts);

  // Hellos of this version cut short: none is answered (only a whole hello pays for its challenge).
  for (std::size_t n = 4; n < hello.size(); ++n) {
    INFO(n << " bytes of a hello of this version");
    CHECK(answers_to(std::vector<std::byte>(hello.begin(), hello.begin() + static_cast<long>(n))).empty());
  }

  // A whole hello of this version: its challenge.
  const std::vector<std::vector<std::byte>> challenged = answers_to(hello);
  REQUIRE(challenged.size() == 1);
  CHECK(is_challenge(challenged[0]));

  // A connect whose cookie is not the host's (so the cookie has still not returned): a challenge
  // again, no larger than the connect.
  std::vector<std::byte> wrong_cookie = challenged[0];
  wrong_cookie[net::k_header_bytes + 8] ^= std::byte{1};  // the cookie's first byte, after the nonce
  const std::optional<std::vector<std::byte>> connect = joiner.connect(wrong_cookie);
  REQUIRE(connect);
  const std::vector<std::vector<std::byte>> rechallenged = answers_to(*connect);
  REQUIRE(rechallenged.size() == 1);
  CHECK(is_challenge(rechallenged[0]));
}

TEST_CASE("no forged datagram, not even one far ahead from the player's own address, moves or locks out a player",
          "[net][session][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(300), {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  // An eavesdropper at the peer's own address sees its relays, and with them its connection id and
  // packet numbers; from another address it sends an update with the number as far ahead as it
  // goes, and one copied from the host's relay with its number moved on.
  RawJoiner spy{group.network().open(VirtualSessions<WalkerSim>::address(1), {}), {}};
  RawJoiner elsewhere{group.network().open(VirtualSessions<WalkerSim>::address(7), {}), {}};
  bool sent = false;
  REQUIRE(group.run(seconds(20), [&](Instant) {
    spy.drain();
    if (sent || group[1].session->tick() < 100) return;
    for (const auto& d : spy.received) {
      const net::Decoded<net::Header> h = net::read_header(d);
      if (!h || h->type != net::MessageType::relay) continue;
      std::vector<std::byte> forged;
      net::Update u;
      u.relay_ack = 1;
      net::write_update(forged, {net::MessageType::update, h->connection, static_cast<std::uint16_t>(h->number + 0x7FFF)}, u, 1);
      forged.resize(forged.size() + net::k_packet_tag_bytes);
      elsewhere.send(forged);
      std::vector<std::byte> copied = d;
      copied[4] = static_cast<std::byte>(net::MessageType::update);  // the number's high byte
      elsewhere.send(copied);
      sent = true;
      break;
    }
  }));
  REQUIRE(sent);
  CHECK(group[0].session->protocol().drops()[net::DropReason::unauthenticated] == 2);
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  CHECK(group[1].hashes.size() == 300);
  CHECK(group.agree());
  CHECK(group[0].session->protocol().slots()[1].state == net::SlotState::active);
}

namespace {

/// An on-path attacker: it sees every datagram a player sends the host (before the player's 20 ms
/// of latency) and races a copy of every `every`th one ahead of the original from its own address,
/// counting the bytes it sends and the bytes the host sends back there.
struct PathRacer {
  std::unique_ptr<net::VirtualSocket> socket;
  std::uint64_t every = 1;
  std::uint64_t seen = 0;
  std::uint64_t copies = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  void race(std::span<const std::byte> datagram) {
    if (seen++ % every != 0) return;
    socket->send(VirtualSessions<WalkerSim>::address(0), datagram);
    ++copies;
    bytes_sent += datagram.size();
  }
  void drain() {
    net::Endpoint from;
    std::vector<std::byte> d;
    while (socket->receive(from, d)) bytes_received += d.size();
  }
};

}  // namespace

TEST_CASE("copies of a player's datagrams raced ahead from another address get at most three times their bytes "
          "there, and no relay",
          "[net][session][hostile]") {
  // Before: a candidate address got every relay for 3 s, some 180 datagrams for one copy. The
  // racer copies one datagram in `every` (handshake included) from 10.0.0.8.
  const std::uint64_t every = GENERATE(1u, 7u, 120u);
  INFO("one copy in " << every);
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(600), {}, walker_step).ok());
  net::NetSimConfig slow;
  slow.delay_ms = 20;
  group.join(net::Role::player, join_config(), slow, walker_step);
  PathRacer racer{group.network().open(VirtualSessions<WalkerSim>::address(7), {}), every};
  group.on_send = [&](std::size_t who, Instant, const net::Endpoint& to, std::span<const std::byte> d) {
    if (who == 1 && to == VirtualSessions<WalkerSim>::address(0)) racer.race(d);
  };
  REQUIRE(group.run(seconds(30), [&](Instant) { racer.drain(); }));
  racer.drain();
  CHECK(racer.copies > 5);
  CHECK(racer.bytes_received > 0);  // challenged: the host saw the copies
  CHECK(racer.bytes_received <= net::k_unproven_factor * racer.bytes_sent);
  const net::NetStats host = group[0].session->stats();
  CHECK(host.path_challenges > 0);
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  CHECK(group[1].hashes.size() == 600);
  CHECK(group.agree());
}

TEST_CASE("a player whose NAT rebinds while copies of its datagrams race from elsewhere moves to its new address",
          "[net][session][hostile]") {
  // Every other datagram of the player is raced from 10.0.0.8, so its new address and the racer's
  // take turns at being the newest: the racer's may not displace the real one before it answers.
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(600), {}, walker_step).ok());
  net::NetSimConfig slow;
  slow.delay_ms = 20;
  group.join(net::Role::player, join_config(), slow, walker_step);
  PathRacer racer{group.network().open(VirtualSessions<WalkerSim>::address(7), {}), 2};
  bool racing = false;
  group.on_send = [&](std::size_t who, Instant, const net::Endpoint& to, std::span<const std::byte> d) {
    if (racing && who == 1 && to == VirtualSessions<WalkerSim>::address(0)) racer.race(d);
  };
  bool moved = false;
  REQUIRE(group.run(seconds(30), [&](Instant) {
    racer.drain();
    if (!moved && group[1].session->tick() >= 120) {
      racing = true;
      group[1].socket->rebind(VirtualSessions<WalkerSim>::address(1, 10001));
      moved = true;
    }
  }));
  REQUIRE(moved);
  racer.drain();
  CHECK(racer.bytes_received <= net::k_unproven_factor * racer.bytes_sent);
  CHECK(group[0].session->stats().path_challenges_withheld > 0);
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  CHECK(group[1].hashes.size() == 600);
  CHECK(group.agree());
  CHECK(group[0].session->protocol().slots()[1].state == net::SlotState::active);
}

TEST_CASE("a joiner whose NAT rebinds its port between its connect and the welcome is welcomed at its new address",
          "[net][session][handshake]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, host_config(240), {}, walker_step).ok());
  net::NetSimConfig slow;
  slow.delay_ms = 30;  // time for the rebind to fall between the connect and the welcome
  group.join(net::Role::player, join_config(), slow, walker_step);
  bool rebound = false;
  REQUIRE(group.run(seconds(20), [&](Instant) {
    if (!rebound && group[1].session->peer_protocol()->state() == net::PeerState::challenged &&
        group[0].session->host_protocol()->connected() == 1) {
      group[1].socket->rebind(VirtualSessions<WalkerSim>::address(1, 10001));
      rebound = true;
    }
  }));
  REQUIRE(rebound);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  CHECK(group[1].hashes.size() == 240);
  CHECK(group.agree());
}

TEST_CASE("two peers behind one address get two slots, and a peer whose port changes keeps its own",
          "[net][session][handshake]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({3, 1000}, 5, host_config(240), {}, walker_step).ok());
  const net::Endpoint shared = VirtualSessions<WalkerSim>::address(5, 9999);
  group.join(net::Role::player, join_config(), {}, walker_step, shared);
  group.join(net::Role::player, join_config(), {}, walker_step, shared);
  bool moved = false;
  REQUIRE(group.run(seconds(20), [&](Instant) {
    if (!moved && group[1].session->tick() >= 120) {  // a NAT rebinds the first one's port
      group[1].socket->rebind(VirtualSessions<WalkerSim>::address(5, 10001));
      moved = true;
    }
  }));
  REQUIRE(moved);
  CHECK(group[1].session->parameters().slot != group[2].session->parameters().slot);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("participant " << i);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].hashes.size() == 240);
  }
  CHECK(group.agree());
  for (net::Slot slot = 0; slot < 3; ++slot) CHECK(group[0].session->protocol().slots()[slot].state == net::SlotState::active);
}

TEST_CASE("spectators and a relay host report the ticks they are behind, not stalls; players on a clean "
          "network do not stall",
          "[net][session][stats]") {
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(300, 2);
  host.relay = true;
  REQUIRE(group.host({2, 1000}, 5, host, {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  group.join(net::Role::player, join_config(), {}, walker_step);
  group.join(net::Role::spectator, join_config(), {}, walker_step);
  REQUIRE(group.run(seconds(20)));
  for (const std::size_t unpaced : {std::size_t{0}, std::size_t{3}}) {
    const net::NetStats s = group[unpaced].session->stats();
    CHECK_FALSE(s.paced);
    CHECK(s.stall_ticks == 0);
    CHECK(s.behind_ticks <= 4);
  }
  for (const std::size_t player : {std::size_t{1}, std::size_t{2}}) {
    const net::NetStats s = group[player].session->stats();
    CHECK(s.paced);
    CHECK(s.stall_ticks == 0);
    CHECK(s.ticks == 300);
  }
  CHECK(group.agree());
}

TEST_CASE("at most 40 bytes of sealed payload per tick each way and a datagram a tick, 4 players with hashes every "
          "tick",
          "[net][session][wire]") {
  VirtualSessions<World> group;
  WorldConfig config = default_world_config(Scene::arena);
  config.players = 4;
  config.arena.bodies = 40;
  const auto bot = testing::world_bot;
  REQUIRE(group.host(config, 3, host_config(1200), {}, bot()).ok());
  for (int i = 0; i < 3; ++i) group.join(net::Role::player, join_config(), {}, bot());
  REQUIRE(group.run(seconds(60)));
  for (std::size_t i = 1; i < 4; ++i) {
    const net::NetStats s = group[i].session->stats();
    INFO("peer " << i << ": " << net::stats_json(s));
    CHECK(s.ticks == 1200);
    CHECK(static_cast<double>(s.bytes_sent) / 1200.0 <= 40.0);
    CHECK(static_cast<double>(s.bytes_received) / 1200.0 <= 40.0);
    CHECK(s.datagrams_sent <= 1200 + 60);      // one a tick, and the handshake and the end
    CHECK(s.datagrams_received <= 1200 + 60);
  }
  CHECK(group.agree());
}

TEST_CASE("departures: a killed peer is gone after the timeout, one that leaves is gone at once, and a "
          "vanished host without migration fails its peers",
          "[net][session][departure]") {
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(600);
  host.migration = false;  // a host's successor is host_migration.tests.cpp's
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  group.join(net::Role::player, join_config(), {}, walker_step);
  Instant left_at{0};
  Instant killed_at{0};
  std::vector<std::pair<Instant, net::ProtocolEvent>> host_events;
  SECTION("a peer killed, another leaving") {
    REQUIRE(group.run(seconds(30), [&](Instant now) {
      if (killed_at == Instant{0} && group[1].session->tick() >= 100) {
        group.kill(1);
        killed_at = now;
      }
      if (left_at == Instant{0} && group[2].session->tick() >= 300) {
        group[2].session->leave(now);
        left_at = now;
      }
    }));
    CHECK(group[0].session->result()->outcome == Outcome::finished);
    CHECK(group[0].hashes.size() == 600);
    CHECK(group[2].session->result()->outcome == Outcome::finished);
    CHECK(group.agree());
    const net::SlotTable& slots = group[0].session->protocol().slots();
    CHECK(slots[1].state == net::SlotState::gone);
    CHECK(slots[2].state == net::SlotState::gone);
    CHECK(slots[2].neutral_from_tick > slots[1].neutral_from_tick);
  }
  SECTION("the host killed") {
    REQUIRE(group.run(seconds(30), [&](Instant) {
      if (group[0].socket && group[0].session->tick() >= 100) group.kill(0);
    }));
    for (std::size_t i = 1; i < 3; ++i) {
      CHECK(group[i].session->result()->outcome == Outcome::network_failed);
      CHECK_THAT(group[i].session->result()->message, Catch::StartsWith("the host is gone (silent for 3000 ms)"));
    }
    CHECK(group.agree());
  }
}

TEST_CASE("a host that cannot record says goodbye to everyone before it stops", "[net][session][departure]") {
  lockstep::testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(2000);
  host.record = dir.file("host.lsr");
  REQUIRE(group.host({2, 1000}, 5, host, {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  // The disk fills: the file may not grow past what it holds once the session runs.
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  bool limited = false;
  Instant host_ended{0};
  Instant peer_ended{0};
  group.run(seconds(30), [&](Instant now) {
    if (!limited && group[0].session->tick() >= 10) {
      rlimit full = before;
      full.rlim_cur = static_cast<rlim_t>(std::filesystem::file_size(dir.file("host.lsr")) + 16);
      REQUIRE(setrlimit(RLIMIT_FSIZE, &full) == 0);
      limited = true;
    }
    if (group[0].session->ended() && host_ended == Instant{0}) host_ended = now;
    if (group[1].session->ended() && peer_ended == Instant{0}) peer_ended = now;
  });
  REQUIRE(setrlimit(RLIMIT_FSIZE, &before) == 0);
  std::signal(SIGXFSZ, previous);
  REQUIRE(group.all_done());
  CHECK(group[0].session->result()->outcome == Outcome::network_failed);
  CHECK_THAT(group[0].session->result()->message, Catch::StartsWith("cannot record"));
  CHECK(group[1].session->result()->outcome == Outcome::network_failed);
  CHECK_THAT(group[1].session->result()->message, Catch::StartsWith("the host ended the session"));
  CHECK(peer_ended - host_ended < milliseconds(500));  // told, not timed out
}

TEST_CASE("the waiting room: a silent claimant frees its slot, and a host can give up waiting",
          "[net][session][handshake]") {
  SECTION("a silent claimant") {
    VirtualSessions<WalkerSim> group;
    REQUIRE(group.host({3, 1000}, 5, host_config(100), {}, walker_step).ok());
    // Someone completes the handshake by hand, takes slot 1, and says nothing more.
    RawJoiner squatter{group.network().open(VirtualSessions<WalkerSim>::address(8), {}), {}};
    HandJoiner hand(5);
    squatter.send(hand.hello());
    group.run(milliseconds(50));
    squatter.drain();
    REQUIRE(!squatter.received.empty());
    const std::optional<std::vector<std::byte>> connect = hand.connect(squatter.received.back());
    REQUIRE(connect.has_value());
    squatter.send(*connect);
    group.run(milliseconds(100));
    CHECK(group[0].session->protocol().slots()[1].state == net::SlotState::active);
    group.run(milliseconds(3500));  // longer than the timeout: the slot is free again
    CHECK(group[0].session->protocol().slots()[1].state == net::SlotState::waiting);
    group.join(net::Role::player, join_config(), {}, walker_step);
    group.join(net::Role::player, join_config(), {}, walker_step);
    REQUIRE(group.run(seconds(20)));
    for (std::size_t i = 1; i < 3; ++i) CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[1].session->parameters().slot == 1);
    CHECK(group.agree());
  }
  SECTION("a host that gives up") {
    VirtualSessions<WalkerSim> group;
    net::HostConfig host = host_config(100);
    host.wait_timeout = seconds(2);
    REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
    group.join(net::Role::player, join_config(), {}, walker_step);
    REQUIRE(group.run(seconds(10)));
    CHECK(group[0].session->result()->outcome == Outcome::network_failed);
    CHECK(group[0].session->result()->message == "gave up waiting for players after 2 s: 2 of 3 slots filled");
    CHECK(group[1].session->result()->outcome == Outcome::network_failed);
  }
}

TEST_CASE("a player that speaks but never sends its inputs is dropped after the timeout, and the others finish",
          "[net][session][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({3, 1000}, 5, host_config(300), {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  RawJoiner mute{group.network().open(VirtualSessions<WalkerSim>::address(8), {}), {}};
  HandJoiner hand(5);
  mute.send(hand.hello());
  std::optional<net::Header> welcome;
  Instant last_update{0};
  REQUIRE(group.run(seconds(30), [&](Instant now) {
    mute.drain();
    for (auto& got : mute.received) {
      if (!welcome) {
        if (const std::optional<std::vector<std::byte>> connect = hand.connect(got)) mute.send(*connect);
      }
      if (const std::optional<net::Header> h = hand.open(got); h && h->type == net::MessageType::welcome) welcome = h;
    }
    mute.received.clear();
    if (welcome && now - last_update >= milliseconds(100)) {  // alive, acknowledging, never an input
      mute.send(hand.sealed(net::MessageType::update,
                            [](std::vector<std::byte>& out, const net::Header& h) { net::write_update(out, h, net::Update{}, 1); }));
      last_update = now;
    }
  }));
  REQUIRE(welcome.has_value());
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  CHECK(group[1].hashes.size() == 300);
  CHECK(group.agree());
  CHECK(group[0].session->protocol().slots()[welcome->connection == 1 ? 1 : 2].state == net::SlotState::gone);
}
