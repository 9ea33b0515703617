// Sessions of the most players a session has (k_max_session_players) on the in-memory network and
// virtual time, the built-in world's bots at 60 Hz: everyone steps the same ticks, the slot table
// reaches every joiner though it changes in more slots than one relay carries, and the wire stays
// within issue 38's bounds: every datagram within k_max_datagram_bytes, up to 40 bytes a tick
// from a player and at most 40 + 4 per player to one. They all join at once, with short timeouts.

#include <catch2/catch.hpp>

#include <optional>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "test_scale.hpp"
#include "virtual_session_configs.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::scaled;
using net::VirtualSessions;
using std::chrono::seconds;

TEST_CASE("a session of 256 players agrees on every tick, and its wire stays within a datagram and 40 + 4 per player",
          "[net][session][wire][crowd]") {
  const std::uint32_t players = net::k_max_session_players;
  const std::uint64_t ticks = scaled(600, 120);
  VirtualSessions<World> group;
  WorldConfig config = default_world_config(Scene::arena);
  config.players = players;
  config.arena.bodies = 40;
  config.substeps = 2;
  const auto bot = testing::world_bot;
  net::HostConfig host = host_config(ticks);
  host.timeout_after = std::chrono::milliseconds(10'000);
  REQUIRE(group.host(config, 3, host, {}, bot()).ok());
  // 255 joiners at once (a join storm), each with a timeout of 1 s, shorter than the ~3 s the
  // host's key-work budget takes to let them all in: told it is busy, each waits its turn.
  for (std::uint32_t i = 1; i < players; ++i) {
    net::JoinConfig join = join_config();
    join.timeout_after = std::chrono::milliseconds(1'000);
    group.join(net::Role::player, join, {}, bot());
  }
  // Each player's bytes once it has stepped k_from ticks: the handshake (the joiners waiting
  // their turn, retrying their connects) is behind it by then.
  constexpr std::uint64_t k_from = 30;
  std::vector<std::optional<net::NetStats>> at_from(players);
  REQUIRE(group.run(seconds(120), [&](net::Instant) {
    for (std::size_t i = 1; i < players; ++i) {
      if (!at_from[i] && group[i].session && group[i].session->tick() >= k_from) at_from[i] = group[i].session->stats();
    }
  }));
  CHECK(group.agree());
  const net::NetStats host_stats = group[0].session->stats();
  INFO("host: " << net::stats_json(host_stats));
  CHECK(host_stats.ticks == ticks);
  // Nothing the host received was dropped (an oversized or unreadable datagram would be) but the
  // connects it had no key work for yet.
  const net::DropCounts& host_drops = group[0].session->protocol().drops();
  CHECK(host_drops.total() == host_drops[net::DropReason::busy]);
  CHECK(host_drops[net::DropReason::busy] > 0);  // the storm did make joiners wait
  for (std::size_t i = 1; i < players; ++i) {
    const net::NetStats s = group[i].session->stats();
    INFO("peer " << i << ": " << net::stats_json(s));
    REQUIRE(s.ticks == ticks);
    REQUIRE(at_from[i]);
    CHECK(group[i].session->protocol().drops().total() == 0);
    const auto steady = static_cast<double>(ticks - at_from[i]->ticks);
    CHECK(static_cast<double>(s.bytes_sent - at_from[i]->bytes_sent) / steady <= 40.0);
    CHECK(static_cast<double>(s.bytes_received - at_from[i]->bytes_received) / steady <= 40.0 + 4.0 * players);
  }
}
