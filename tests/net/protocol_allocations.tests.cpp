// The protocols allocate nothing per datagram once a session runs: every global allocation of
// the test binary is counted while a host and a peer protocol exchange 2,000 ticks of datagrams.
// Only the tick logs' amortised growth may allocate (a few dozen times in all).

#include <catch2/catch.hpp>

#include "allocation_count.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"

TEST_CASE("a running host and peer protocol allocate nothing per datagram", "[net][protocol][allocations]") {
  using namespace lockstep::net;
  const Endpoint host_at(boost::asio::ip::make_address_v4(0x0A000001u), 7777);
  const Endpoint peer_at(boost::asio::ip::make_address_v4(0x0A000002u), 40000);
  HostProtocolConfig hc;
  hc.players = 2;
  hc.end_tick = 100'000;
  hc.input_bytes = 2;
  hc.neutral_input = std::vector<std::byte>(2);
  hc.sim_name = "test";
  hc.test_key_seed = 99;
  hc.credentials.open = true;
  HostProtocol host(hc, Instant{0});
  PeerProtocolConfig pc;
  pc.host = host_at;
  pc.input_bytes = 2;
  pc.neutral_input = std::vector<std::byte>(2);
  pc.sim_name = "test";
  pc.nonce = 7;
  PeerProtocol peer(pc, Instant{0});

  std::uint64_t datagrams = 0;
  const auto exchange = [&](Instant now) {
    host.poll(now);
    peer.poll(now);
    for (const Transmit& t : peer.outbox().pending()) {
      host.receive(peer_at, t.bytes, now);
      ++datagrams;
    }
    peer.outbox().clear();
    for (const Transmit& t : host.outbox().pending()) {
      peer.receive(host_at, t.bytes, now);
      ++datagrams;
    }
    host.outbox().clear();
  };
  const std::array<std::byte, 2> input{std::byte{1}, std::byte{0}};
  Instant now{0};
  std::uint64_t host_tick = 0;
  std::uint64_t peer_tick = 0;
  std::uint64_t given = hc.input_delay;
  const auto tick = [&] {
    now += std::chrono::microseconds(16'667);
    host.add_local_input(given + 1, input);
    peer.add_local_input(given + 1, input);
    ++given;
    exchange(now);
    while (host_tick < host.ticks().known_through()) {
      ++host_tick;
      host.on_stepped(host_tick, host_tick * 31);
    }
    while (peer_tick < peer.ticks().known_through()) {
      ++peer_tick;
      peer.on_stepped(peer_tick, peer_tick * 31);
    }
    exchange(now + std::chrono::microseconds(8'000));
  };
  // The handshake and the first ticks: allocations expected (welcome, events, first growth).
  for (int i = 0; i < 100 && !host.start_time(); ++i) exchange(now += std::chrono::milliseconds(5));
  REQUIRE(host.start_time().has_value());
  now = *host.start_time();
  for (int i = 0; i < 200; ++i) tick();
  REQUIRE(peer_tick > 150);
  for (ProtocolEvent e; host.poll_event(e) || peer.poll_event(e);) {
  }

  datagrams = 0;
  lockstep::testing::AllocationCount count;
  for (int i = 0; i < 2000; ++i) tick();
  const std::uint64_t allocations = count.stop();
  INFO(allocations << " allocations for " << datagrams << " datagrams");
  CHECK(peer_tick > 2100);
  CHECK(datagrams >= 4000);
  CHECK(allocations <= 60);  // the logs' growth, doubling: far below one per datagram
  CHECK_FALSE(host.desync_tick());
}
