// What the protocols ask of the session (SessionRequest), seen from a host and a joiner run by hand
// over in-memory datagrams: a joiner is asked to make its simulation once welcomed; a host with a
// late joiner asks for its state once, however often it is polled, until it is given; the joiner
// then receives exactly those bytes, once, with the tick and hash the host announced.

#include <catch2/catch.hpp>

#include <cstdint>
#include <variant>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "lockstep/engine/world.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/session/simulation_bytes.hpp"

using namespace lockstep;
using namespace lockstep::net;

namespace {

using Bytes = SimulationBytes<World>;

/// A host of two players that starts once `start_with` slots are filled.
HostSettings host_settings(std::uint32_t start_with) {
  HostSettings h;
  h.start_with = start_with;
  h.countdown = std::chrono::milliseconds(0);
  h.end_tick = 100'000;
  h.test_key_seed = 0x5EC12E7;
  h.credentials.open = true;
  return h;
}

/// A host (slot 0, stepping by hand) and a joiner, their datagrams passed between them.
struct HandPair {
  explicit HandPair(std::uint32_t start_with) : host(Bytes::host_config(host_settings(start_with), config, 3, config.players).value(), now) {}

  WorldConfig config = [] {
    WorldConfig c = default_world_config(Scene::arena);
    c.players = 2;
    c.arena.bodies = 20;
    return c;
  }();
  Endpoint host_at{boost::asio::ip::make_address_v4(0x0A000001u), 7777};
  Endpoint peer_at{boost::asio::ip::make_address_v4(0x0A000002u), 40001};
  Instant now{1'000'000};
  HostProtocol host;
  std::optional<PeerProtocol> peer;
  std::uint64_t stepped = 0;
  std::uint64_t given = 0;

  void join() {
    JoinSettings j;
    j.host = host_at;
    j.nonce = 77;
    j.test_key_seed = 99;
    peer.emplace(Bytes::peer_config(j), now);
  }
  /// 10 ms pass: the host gives its own inputs and steps what is assembled; datagrams cross.
  void frame() {
    now += Duration(10'000);
    while (given < stepped + 3) host.add_local_input(++given, Bytes::neutral_input());
    for (; stepped < host.ticks().known_through(); ++stepped) host.on_stepped(stepped + 1, 0xAB00 + stepped);
    host.poll(now);
    if (peer) peer->poll(now);
    for (const Transmit& t : host.outbox().pending()) {
      if (peer && t.to == peer_at) peer->receive(host_at, t.bytes, now);
    }
    host.outbox().clear();
    if (!peer) return;
    for (const Transmit& t : peer->outbox().pending()) {
      if (t.to == host_at) host.receive(peer_at, t.bytes, now);
    }
    peer->outbox().clear();
  }
};

std::vector<SessionRequest> drain(LockstepProtocol& p) {
  std::vector<SessionRequest> out;
  SessionRequest r;
  while (p.poll_request(r)) out.push_back(std::move(r));
  return out;
}

}  // namespace

TEST_CASE("a host asks once for its state for a late joiner, and the joiner receives those bytes once") {
  HandPair pair(1);  // the host alone starts; the second slot is joined under way
  for (int i = 0; i < 30; ++i) pair.frame();
  REQUIRE(pair.stepped > 10);
  CHECK(drain(pair.host).empty());  // no one waits for a state yet
  pair.join();
  std::size_t asked = 0;
  for (int i = 0; i < 50; ++i) {
    pair.frame();
    for (const SessionRequest& r : drain(pair.host)) {
      CHECK(std::holds_alternative<request::SendState>(r));
      ++asked;
    }
  }
  CHECK(asked == 1);  // polled 50 frames unanswered: asked once
  std::vector<SessionRequest> peer_asks = drain(*pair.peer);
  CHECK(peer_asks.empty());  // not welcomed before the host has a state to offer

  std::vector<std::byte> state(3 * k_state_piece_bytes + 100);
  for (std::size_t i = 0; i < state.size(); ++i) state[i] = static_cast<std::byte>(i * 7);
  const std::uint64_t tick = pair.stepped;
  pair.host.provide_state(tick, state, 0x5717E, pair.now);
  for (int i = 0; i < 100; ++i) {
    pair.frame();
    for (SessionRequest& r : drain(*pair.peer)) peer_asks.push_back(std::move(r));
  }
  CHECK(drain(pair.host).empty());
  REQUIRE(peer_asks.size() == 2);
  const auto* welcomed = std::get_if<request::Welcomed>(&peer_asks[0]);
  REQUIRE(welcomed != nullptr);
  CHECK(welcomed->start_tick == tick);
  CHECK(welcomed->config == canonical_bytes(pair.config));
  const auto* received = std::get_if<request::StateReceived>(&peer_asks[1]);
  REQUIRE(received != nullptr);
  CHECK(received->tick == tick);
  CHECK(received->hash == 0x5717E);
  CHECK_FALSE(received->resync);
  CHECK(received->bytes == state);
}

TEST_CASE("a joiner of a session from its start is asked to make its simulation from the welcome alone") {
  HandPair pair(0);  // the host waits for both players: the joiner plays from tick 1
  pair.join();
  std::vector<SessionRequest> asks;
  for (int i = 0; i < 30; ++i) {
    pair.frame();
    for (SessionRequest& r : drain(*pair.peer)) asks.push_back(std::move(r));
  }
  REQUIRE(asks.size() == 1);
  const auto* welcomed = std::get_if<request::Welcomed>(&asks[0]);
  REQUIRE(welcomed != nullptr);
  CHECK(welcomed->start_tick == 0);
  CHECK(drain(pair.host).empty());
}
