// Sealing and opening datagrams: what seals opens once, under the other side's keys only; any
// change to header, payload or tag, any truncation or extension, a replay, the other direction's
// key or another number does not open; the nonce is laid out as net/PROTOCOL.md says.

#include <catch2/catch.hpp>

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "allocation_count.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

using namespace lockstep::net;
using lockstep::net::detail::open_datagram;
using lockstep::net::detail::seal_datagram;

namespace {

std::array<std::byte, k_key_exchange_bytes> seed(std::uint8_t first) {
  std::array<std::byte, k_key_exchange_bytes> s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>(first + 7 * i);
  return s;
}

CredentialSecret secret(std::uint8_t first) {
  CredentialSecret s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>(first + 3 * i);
  return s;
}

/// A joiner's and a host's keys for one connection, from two seeded pairs and one secret.
struct Pair {
  KeyExchangePair joiner_pair{seed(1)};
  KeyExchangePair host_pair{seed(2)};
  ConnectionKeys joiner = *ConnectionKeys::for_joiner(joiner_pair, host_pair.public_key(), secret(9));
  ConnectionKeys host = *ConnectionKeys::for_host(host_pair, joiner_pair.public_key(), secret(9));
};

std::vector<std::byte> datagram(std::size_t header, std::size_t payload) {
  std::vector<std::byte> d(header + payload);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::byte>(i * 31 + 5);
  return d;
}

}  // namespace

TEST_CASE("the two sides of a key exchange hold each other's keys, and other pairs hold others", "[net][crypto]") {
  REQUIRE(crypto_ready());
  Pair p;
  CHECK(p.joiner.send() == p.host.receive());
  CHECK(p.joiner.receive() == p.host.send());
  CHECK(p.joiner.send() != p.joiner.receive());
  CHECK(p.joiner.sending() == Direction::to_host);
  CHECK(p.host.sending() == Direction::to_joiner);
  KeyExchangePair other(seed(3));
  const ConnectionKeys third = *ConnectionKeys::for_host(p.host_pair, other.public_key(), secret(9));
  CHECK(third.receive() != p.host.receive());
  CHECK(third.send() != p.host.send());
  // Moving keys leaves the source with nothing to seal under.
  ConnectionKeys moved = std::move(p.joiner);
  CHECK(moved.send() == p.host.receive());
  CHECK(p.joiner.send() == PacketKey{});
  // The same seed gives the same pair; an unacceptable public key (all zero) gives no keys.
  CHECK(KeyExchangePair(seed(1)).public_key() == p.joiner_pair.public_key());
  CHECK_FALSE(ConnectionKeys::for_joiner(p.joiner_pair, PublicKey{}, secret(9)).has_value());
  CHECK_FALSE(ConnectionKeys::for_host(p.host_pair, PublicKey{}, secret(9)).has_value());
}

TEST_CASE("the credential's secret is in both keys: a joiner without it derives keys the host does not hold",
          "[net][crypto]") {
  REQUIRE(crypto_ready());
  Pair p;
  ConnectionKeys wrong = *ConnectionKeys::for_joiner(p.joiner_pair, p.host_pair.public_key(), secret(10));
  CHECK(wrong.send() != p.host.receive());
  CHECK(wrong.receive() != p.host.send());
  // The mixed keys are not crypto_kx's own (the secret of an open session, all zeros, mixes too).
  const ConnectionKeys open = *ConnectionKeys::for_joiner(p.joiner_pair, p.host_pair.public_key(), CredentialSecret{});
  std::array<unsigned char, crypto_kx_PUBLICKEYBYTES> pk{};
  std::array<unsigned char, crypto_kx_SECRETKEYBYTES> sk{};
  std::array<unsigned char, crypto_kx_SESSIONKEYBYTES> rx{}, tx{};
  const auto joiner_seed = seed(1);
  REQUIRE(crypto_kx_seed_keypair(pk.data(), sk.data(), reinterpret_cast<const unsigned char*>(joiner_seed.data())) == 0);
  REQUIRE(crypto_kx_client_session_keys(rx.data(), tx.data(), pk.data(), sk.data(),
                                        reinterpret_cast<const unsigned char*>(p.host_pair.public_key().data())) == 0);
  CHECK(std::memcmp(open.send().data(), tx.data(), tx.size()) != 0);
  CHECK(std::memcmp(open.receive().data(), rx.data(), rx.size()) != 0);
  // A sealed datagram opens only under the keys of the same secret.
  PacketProtection joiner(std::move(p.joiner));
  PacketProtection host(std::move(p.host));
  std::vector<std::byte> d = datagram(7, 30);
  joiner.seal(d, 7);
  std::vector<std::byte> copy = d;
  PacketProtection stranger(std::move(wrong));
  CHECK(stranger.open(copy, 7, 0) == OpenOutcome::unauthenticated);
  CHECK(host.open(d, 7, 0) == OpenOutcome::opened);
}

TEST_CASE("a header's 16 bits of packet number expand to the full number nearest the one expected",
          "[net][crypto]") {
  // RFC 9000's example, on 16 bits: expected 0xa82f30eb with low bits 0x9b32 is 0xa82f9b32.
  CHECK(expand_packet_number(0xa82f30eb, 0x9b32) == 0xa82f9b32);
  CHECK(expand_packet_number(0, 0) == 0);
  CHECK(expand_packet_number(0, 5) == 5);
  CHECK(expand_packet_number(0, 0xFFFF) == 0xFFFF);  // nothing below 0: the only candidate
  CHECK(expand_packet_number(0x10000, 0xFFFF) == 0xFFFF);    // just behind
  CHECK(expand_packet_number(0xFFF0, 0x0003) == 0x10003);    // just past the wrap
  CHECK(expand_packet_number(0x18000, 0x0000) == 0x20000);   // exactly half a window either way: ahead
  CHECK(expand_packet_number(0x17FFF, 0xFFFF) == 0x1FFFF);   // less than half ahead
  // Near 2^64 no candidate wraps.
  CHECK(expand_packet_number(UINT64_MAX - 2, 0xFFFF) == UINT64_MAX);
  CHECK(expand_packet_number(UINT64_MAX - 2, 0x0000) == UINT64_MAX - 0xFFFF);
  // Every number within half a window of the expected one comes back exactly.
  for (std::uint64_t expected : {std::uint64_t{0x8000}, std::uint64_t{123456789}, std::uint64_t{1} << 40}) {
    for (std::int64_t d = -0x7FFF; d <= 0x7FFF; d += 97) {
      const std::uint64_t n = expected + static_cast<std::uint64_t>(d);
      CHECK(expand_packet_number(expected, static_cast<std::uint16_t>(n)) == n);
    }
  }
}

TEST_CASE("keys and protections have one owner: no copies, and what is moved from is spent", "[net][crypto]") {
  STATIC_REQUIRE(!std::is_copy_constructible_v<ConnectionKeys>);
  STATIC_REQUIRE(!std::is_copy_assignable_v<ConnectionKeys>);
  STATIC_REQUIRE(!std::is_copy_constructible_v<PacketProtection>);
  STATIC_REQUIRE(!std::is_copy_assignable_v<PacketProtection>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<PacketProtection>);
  Pair p;
  PacketProtection first(std::move(p.joiner));
  std::vector<std::byte> d = datagram(7, 20);
  CHECK(first.seal(d, 7) == 0);
  PacketProtection second(std::move(first));
  CHECK(second.next_number() == 1);           // the count goes with the keys
  CHECK(first.next_number() == UINT64_MAX);   // spent: seal refuses it
  CHECK(second.seal(d, 7) == 1);
}

TEST_CASE("a sealed datagram opens once on the other side, with its header clear and its payload back", "[net][crypto]") {
  Pair p;
  const Pair keys;  // the same seeds: the same keys, for opening by hand
  PacketProtection joiner(std::move(p.joiner));
  PacketProtection host(std::move(p.host));
  for (std::size_t payload : {0u, 1u, 15u, 16u, 17u, 300u, 1380u}) {
    INFO(payload << " payload bytes");
    const std::vector<std::byte> plain = datagram(7, payload);
    std::vector<std::byte> d = plain;
    const std::uint64_t number = joiner.next_number();
    CHECK(joiner.seal(d, 7) == number);
    REQUIRE(d.size() == plain.size() + k_packet_tag_bytes);
    CHECK(std::equal(plain.begin(), plain.begin() + 7, d.begin()));  // the header travels clear
    if (payload >= 16) CHECK_FALSE(std::equal(plain.begin() + 7, plain.end(), d.begin() + 7));
    std::vector<std::byte> again = d;
    REQUIRE(host.open(d, 7, number) == OpenOutcome::opened);
    CHECK(d == plain);
    CHECK(host.open(again, 7, number) == OpenOutcome::replayed);
  }
  // And the other way, under the other key.
  std::vector<std::byte> d = datagram(7, 40);
  const std::vector<std::byte> plain = d;
  const std::uint64_t number = host.next_number();
  host.seal(d, 7);
  std::vector<std::byte> to_itself = d;
  CHECK_FALSE(open_datagram(to_itself, 7, number, keys.host.receive(), Direction::to_host));  // its own keys open nothing it sent
  CHECK_FALSE(open_datagram(to_itself = d, 7, number, keys.host.receive(), Direction::to_joiner));
  REQUIRE(joiner.open(d, 7, number) == OpenOutcome::opened);
  CHECK(d == plain);
}

TEST_CASE("no flipped bit, truncation, extension, other number or other key opens", "[net][crypto][hostile]") {
  Pair p;
  std::vector<std::byte> sealed = datagram(7, 48);
  seal_datagram(sealed, 7, 41, p.joiner.send(), Direction::to_host);
  std::uint64_t opened = 0;
  for (std::size_t byte = 0; byte < sealed.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<std::byte> d = sealed;
      d[byte] ^= static_cast<std::byte>(1 << bit);
      if (open_datagram(d, 7, 41, p.host.receive(), Direction::to_host)) ++opened;
    }
  }
  CHECK(opened == 0);
  std::vector<std::byte> flipped = sealed;
  flipped[30] ^= std::byte{4};
  REQUIRE_FALSE(open_datagram(flipped, 7, 41, p.host.receive(), Direction::to_host));
  CHECK(std::equal(sealed.begin(), sealed.begin() + 7, flipped.begin()));  // the header as it came
  CHECK(std::all_of(flipped.begin() + 7, flipped.end(), [](std::byte b) { return b == std::byte{0}; }));
  for (std::size_t size = 0; size < sealed.size(); ++size) {
    std::vector<std::byte> d(sealed.begin(), sealed.begin() + static_cast<std::ptrdiff_t>(size));
    CHECK_FALSE(open_datagram(d, 7, 41, p.host.receive(), Direction::to_host));
  }
  std::vector<std::byte> longer = sealed;
  longer.push_back(std::byte{0});
  CHECK_FALSE(open_datagram(longer, 7, 41, p.host.receive(), Direction::to_host));
  std::vector<std::byte> d = sealed;
  CHECK_FALSE(open_datagram(d, 7, 42, p.host.receive(), Direction::to_host));    // another number
  d = sealed;
  CHECK_FALSE(open_datagram(d, 7, 41, p.host.receive(), Direction::to_joiner));  // the other direction
  d = sealed;
  CHECK_FALSE(open_datagram(d, 7, 41, p.host.send(), Direction::to_host));       // the other key
  d = sealed;
  CHECK_FALSE(open_datagram(d, 6, 41, p.host.receive(), Direction::to_host));    // a shorter header
  d = sealed;
  CHECK(open_datagram(d, 7, 41, p.host.receive(), Direction::to_host) == 48u);
}

TEST_CASE("a forged or replayed datagram leaves the window as it was, and late ones still open", "[net][crypto][hostile]") {
  Pair p;
  PacketProtection joiner(std::move(p.joiner));
  PacketProtection host(std::move(p.host));
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0; i < 10; ++i) {
    sent.push_back(datagram(7, 20));
    joiner.seal(sent.back(), 7);
  }
  // A forgery claiming a far newer number does not move the window: every real one still opens.
  std::vector<std::byte> forged = sent[9];
  CHECK(host.open(forged, 7, 1'000'000) == OpenOutcome::unauthenticated);
  for (int i : {9, 3, 0, 8, 1, 2, 7, 4, 6, 5}) {
    std::vector<std::byte> d = sent[static_cast<std::size_t>(i)];
    CHECK(host.open(d, 7, static_cast<std::uint64_t>(i)) == OpenOutcome::opened);
  }
  for (int i = 0; i < 10; ++i) {
    std::vector<std::byte> d = sent[static_cast<std::size_t>(i)];
    CHECK(host.open(d, 7, static_cast<std::uint64_t>(i)) == OpenOutcome::replayed);
  }
}

TEST_CASE("the nonce is the direction as a u32 and the packet number as a u64, both little-endian, and the magic and "
          "version are authenticated before the header",
          "[net][crypto]") {
  // What another implementation would do from net/PROTOCOL.md alone, with libsodium directly.
  Pair p;
  const std::uint64_t number = 0x0102030405060708ull;
  std::vector<std::byte> d = datagram(5, 30);
  const std::vector<std::byte> plain = d;
  seal_datagram(d, 5, number, p.host.send(), Direction::to_joiner);
  const unsigned char nonce[12] = {1, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1};
  std::vector<unsigned char> out(d.size());
  unsigned long long out_bytes = 0;
  const auto* u = reinterpret_cast<const unsigned char*>(d.data());
  // The associated data: "LK", the version, then the datagram's header as sent.
  std::vector<unsigned char> ad = {'L', 'K', 16};
  ad.insert(ad.end(), u, u + 5);
  REQUIRE(crypto_aead_chacha20poly1305_ietf_decrypt(out.data(), &out_bytes, nullptr, u + 5, d.size() - 5, ad.data(), ad.size(),
                                                    nonce, reinterpret_cast<const unsigned char*>(p.joiner.receive().data())) == 0);
  REQUIRE(out_bytes == 30);
  CHECK(std::equal(plain.begin() + 5, plain.end(), reinterpret_cast<const std::byte*>(out.data())));
}

TEST_CASE("sealing and opening allocate nothing once a datagram's buffer is warm", "[net][crypto][allocations]") {
  Pair p;
  PacketProtection joiner(std::move(p.joiner));
  PacketProtection host(std::move(p.host));
  std::vector<std::byte> d;
  d.reserve(1400);
  lockstep::testing::AllocationCount count;
  std::uint64_t failed = 0;
  for (int i = 0; i < 1000; ++i) {
    d.assign(60, std::byte{static_cast<unsigned char>(i)});
    const std::uint64_t number = joiner.next_number();
    joiner.seal(d, 11);
    if (host.open(d, 11, number) != OpenOutcome::opened) ++failed;
  }
  CHECK(count.stop() == 0);
  CHECK(failed == 0);
}

TEST_CASE("every message at its largest, sealed, fits one datagram of k_max_datagram_bytes", "[net][crypto][wire][size]") {
  using namespace lockstep::net;
  Pair p;
  const std::uint64_t far_tick = lockstep::k_tick_limit - 1;  // every tick a six-byte varint
  std::vector<std::byte> out;
  const auto sealed_size = [&](std::vector<std::byte>& d) {
    seal_datagram(d, k_sealed_header_bytes, 1, p.host.send(), Direction::to_joiner);
    return d.size();
  };
  SECTION("a welcome") {
    Welcome w;
    w.slot = 3;
    w.players = static_cast<std::uint16_t>(k_max_session_players);
    w.input_bytes = k_max_input_bytes;
    w.end_tick = far_tick;
    w.seed = ~0ull;
    w.sim_name.assign(k_max_sim_name, 'n');
    w.config.assign(k_max_config_bytes, std::byte{0xC0});
    w.start_tick = far_tick;
    w.state_bytes = k_max_state_transfer_bytes;
    w.late = true;
    w.resync = true;
    w.reconnect_key = ~0ull;
    w.prediction_window = k_max_prediction_window;
    write_welcome(out, Header{MessageType::welcome, 1, 0}, w);
    seal_once(out, k_sealed_header_bytes, p.host, OnceNonce{});
    CHECK(out.size() <= k_max_datagram_bytes);
  }
  SECTION("an update") {
    Update u;
    u.relay_ack = far_tick;
    u.slots_ack = far_tick;
    std::vector<std::byte> inputs(static_cast<std::size_t>(k_max_ticks_per_datagram) * k_max_input_bytes);
    u.inputs_first_tick = far_tick - k_max_ticks_per_datagram;
    u.inputs = inputs;
    u.hashes_first_tick = 1;
    u.hash_count = k_max_ticks_per_datagram;
    u.state_received = k_max_state_transfer_bytes;
    u.state_tick = far_tick;
    u.state_held = ~0ull;
    u.timing = Timing{1, 2, 3};
    u.path_response = ~0ull;
    write_update(out, Header{MessageType::update, 1, 0}, u, k_max_input_bytes);
    CHECK(sealed_size(out) <= k_max_datagram_bytes);
  }
  SECTION("a relay: its inputs fill the room the host leaves them, beside 32 slot changes") {
    Relay r;
    r.first_tick = 1;
    r.input_ack = far_tick;
    r.hash_ack = far_tick;
    r.slots_version = far_tick;
    r.slot_change_count = k_max_slot_changes_per_relay;
    for (std::uint32_t i = 0; i < r.slot_change_count; ++i) {
      r.slot_changes[i] = {static_cast<Slot>(i * 4 + 3), {SlotState::gone, far_tick, 0}};  // 4 apart
    }
    r.input_delay = k_max_input_delay;
    r.delay_from_tick = far_tick;
    r.desync_tick = far_tick;
    r.running = true;
    r.resync = StateOffer{far_tick, k_max_state_transfer_bytes, ~0ull};
    r.inputs_decided = lockstep::k_tick_limit - 1;
    r.timing = Timing{1, 2, 3};
    r.lead = -12;
    const std::vector<std::byte> inputs(relay_input_room(true, r.slot_change_count));
    r.inputs = inputs;
    r.input_ticks = k_max_ticks_per_datagram;
    write_relay(out, Header{MessageType::relay, 1, 0}, r, {k_max_slot_changes_per_relay * 4, k_max_input_bytes, true});
    CHECK(sealed_size(out) <= k_max_datagram_bytes);
    // Without slot changes, the room grows by what they would have taken.
    r.slots_version.reset();
    const std::vector<std::byte> more(relay_input_room(false, 0));
    r.inputs = more;
    write_relay(out, Header{MessageType::relay, 1, 0}, r, {k_max_slot_changes_per_relay * 4, k_max_input_bytes, true});
    CHECK(sealed_size(out) <= k_max_datagram_bytes);
  }
  SECTION("a state piece") {
    const std::vector<std::byte> piece(k_state_piece_bytes);
    write_state(out, Header{MessageType::state, 1, 0},
                {(k_max_state_transfer_bytes / k_state_piece_bytes - 1) * k_state_piece_bytes, 0, piece});
    CHECK(sealed_size(out) <= k_max_datagram_bytes);
  }
}
