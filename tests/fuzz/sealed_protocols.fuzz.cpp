// libFuzzer target for what lies behind the seal. A host protocol admits a joiner written by hand
// (tests/support/hand_joiner.hpp), and a peer protocol is welcomed by a host written by hand here;
// both hand-written sides hold their connection's keys, so the fuzzed messages they send are
// sealed properly and open, and reach every handler the datagram decoder's target stops short of:
// the host's updates and byes, the peer's relays, starts, state pieces, path challenges and byes.
//
// The input is a list of records: a selector byte (bit 0: to the peer, else to the host; bit 1: the
// message is written by the wire's writer from fuzzed fields, else the plaintext is the record's
// bytes; bits 2–5: the message type), a byte of milliseconds to move time on by, a length byte and
// that many bytes. Both protocols are polled after each record.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hand_joiner.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace {

using namespace lockstep::net;

constexpr std::uint32_t k_players = 3;
constexpr std::uint32_t k_input_bytes = 2;
const Endpoint k_host_at(boost::asio::ip::make_address_v4(0x0A000001u), 7777);
const Endpoint k_joiner_at(boost::asio::ip::make_address_v4(0x0A000002u), 4000);

/// Reads fuzzed bytes as numbers; past the end, zeros.
struct Bytes {
  std::span<const std::byte> data;
  std::size_t at = 0;
  std::uint8_t u8() { return at < data.size() ? std::to_integer<std::uint8_t>(data[at++]) : 0; }
  std::uint64_t small() { return u8(); }
  std::span<const std::byte> take(std::size_t n) {
    n = std::min(n, data.size() - at);
    const std::span<const std::byte> out = data.subspan(at, n);
    at += n;
    return out;
  }
};

std::array<std::byte, k_key_exchange_bytes> seed_of(std::uint8_t first) {
  std::array<std::byte, k_key_exchange_bytes> s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>(first + 3 * i);
  return s;
}

void write_sealed_header(std::vector<std::byte>& out, MessageType type, ConnectionId connection, std::uint64_t number) {
  out.clear();
  out.push_back(static_cast<std::byte>(k_sealed_type_bit | static_cast<std::uint8_t>(type)));
  out.push_back(static_cast<std::byte>(connection & 0xFF));
  out.push_back(static_cast<std::byte>(connection >> 8));
  out.push_back(static_cast<std::byte>(number & 0xFF));
  out.push_back(static_cast<std::byte>((number >> 8) & 0xFF));
}

/// A message of `type` written by the wire's own writer from fuzzed fields (so that it parses, and
/// the handler behind the reader is what the fuzzer explores).
void write_structured(std::vector<std::byte>& out, MessageType type, ConnectionId connection, std::uint64_t number, Bytes& in) {
  const Header h{type, connection, static_cast<std::uint16_t>(number)};
  std::vector<std::byte> inputs(static_cast<std::size_t>(in.u8() % 5) * k_input_bytes);
  for (std::byte& b : inputs) b = static_cast<std::byte>(in.u8() % 3);
  switch (type) {
    case MessageType::update: {
      Update u;
      u.relay_ack = in.small();
      u.slots_ack = in.small() % 4;
      u.inputs_first_tick = u.relay_ack + 1 + in.small() % 8;
      u.inputs = inputs;
      u.hashes_first_tick = u.relay_ack + 1 + in.small() % 8;
      u.hash_count = in.u8() % 4;
      for (std::uint32_t i = 0; i < u.hash_count; ++i) u.hashes[i] = in.u8();
      if (in.u8() % 2 == 1) {
        u.state_tick = in.small();
        u.state_received = in.small() * 512;
        u.state_held = in.u8();
      }
      if (in.u8() % 2 == 1) u.timing = Timing{in.u8(), in.u8(), in.u8()};
      if (in.u8() % 2 == 1) u.path_response = in.small() | 1;
      return write_update(out, h, u, k_input_bytes);
    }
    case MessageType::relay: {
      Relay r;
      r.first_tick = 1 + in.small();
      r.input_ack = r.first_tick - 1 + in.small() % 4;
      r.hash_ack = r.first_tick - 1 + in.small() % 4;
      // Whole ticks, coded as each one's changes from the one before (the first's from zeros).
      const std::size_t stride = static_cast<std::size_t>(k_players) * k_input_bytes;
      std::vector<std::byte> ticks(stride + inputs.size() * k_players);
      for (std::size_t i = stride; i < ticks.size(); ++i) ticks[i] = static_cast<std::byte>(in.u8() % 3);
      std::vector<std::byte> relayed;
      for (std::size_t at = stride; at < ticks.size(); at += stride) {
        write_tick_changes(relayed, std::span(ticks).subspan(at - stride, stride), std::span(ticks).subspan(at, stride), k_players,
                           k_input_bytes);
      }
      r.inputs = relayed;
      r.input_ticks = static_cast<std::uint32_t>(ticks.size() / stride - 1);
      r.after_previous = in.u8() % 2 == 1;
      if (in.u8() % 2 == 1) {
        r.slots_version = 1 + in.small() % 4;
        for (std::uint32_t p = 0; p < k_players; ++p) {
          if (in.u8() % 2 == 0) continue;  // unchanged
          SlotChange& change = r.slot_changes[r.slot_change_count++];
          change.slot = static_cast<Slot>(p);
          change.status.state = static_cast<SlotState>(in.u8() % 4);
          change.status.neutral_from_tick = change.status.state == SlotState::gone ? 1 + in.small() : 0;
          change.status.plays_from_tick = change.status.state == SlotState::active ? in.small() : 0;
        }
        r.input_delay = static_cast<std::uint8_t>(in.u8() % 8);
        r.delay_from_tick = 1 + in.small();
      }
      if (in.u8() % 4 == 1) r.desync_tick = r.first_tick + in.small() % 4;
      r.running = in.u8() % 2 == 1;
      if (in.u8() % 4 == 1) r.resync = StateOffer{in.small(), 1 + in.small() * 64, in.small()};
      if (in.u8() % 2 == 1) r.timing = Timing{in.u8(), in.u8(), in.u8()};
      return write_relay(out, h, r, {k_players, k_input_bytes, false});
    }
    case MessageType::state: {
      const std::span<const std::byte> piece = in.take(1 + in.u8() % 64);
      return write_state(out, h, {in.small() * k_state_piece_bytes, state_piece_checksum(piece), piece});
    }
    case MessageType::start: return write_start(out, h, {static_cast<std::uint16_t>(in.small() * 4), static_cast<std::uint8_t>(in.u8() % 8)});
    case MessageType::path: return write_path(out, h, {in.small() | 1});
    default: return write_bye(out, h, {in.small()});
  }
}

/// The host's side, by hand, of one peer protocol's handshake: a challenge with its key, and the
/// welcome that answers the peer's connect; then it holds the connection's traffic keys.
class HandHost {
 public:
  /// Welcomes `peer` (which has sent its hello); false if the peer would not take it.
  bool welcome(PeerProtocol& peer, Instant now) {
    peer.outbox().clear();
    std::vector<std::byte> d;
    Cookie cookie{};
    write_challenge(d, {MessageType::challenge, 0, 0}, {k_nonce, cookie, key_.public_key()});
    peer.receive(k_host_at, d, now);
    if (peer.outbox().pending().empty()) return false;
    const std::vector<std::byte> connect = peer.outbox().pending().back().bytes;
    peer.outbox().clear();
    const Decoded<Connect> clear = read_connect_clear(connect);
    if (!clear) return false;
    std::optional<ConnectionKeys> handshake = ConnectionKeys::for_host(key_, clear->joiner_key, CredentialSecret{});
    if (!handshake) return false;
    Welcome w;
    w.host_ephemeral = ephemeral_.public_key();
    w.nonce = k_nonce;
    w.session = 1;
    w.slot = 1;
    w.players = k_players;
    w.input_bytes = k_input_bytes;
    w.end_tick = 200;
    w.sim_name = "fuzz";
    w.resync = true;
    w.reconnect_key = 99;
    write_welcome(d, {MessageType::welcome, k_connection, 0}, w);
    seal_once(d, k_sealed_header_bytes, *handshake, OnceNonce{});
    std::optional<ConnectionKeys> traffic =
        ConnectionKeys::for_host(ephemeral_, clear->joiner_key, traffic_secret(CredentialSecret{}, *handshake));
    if (!traffic) return false;
    traffic_.emplace(std::move(*traffic));
    peer.receive(k_host_at, d, now);
    return peer.state() == PeerState::welcomed;
  }
  /// Seals `out` (a sealed header and plaintext) as the host's next datagram.
  void seal(std::vector<std::byte>& out) { traffic_->seal(out, k_sealed_header_bytes); }
  [[nodiscard]] std::uint64_t next_number() const { return traffic_->next_number(); }

  static constexpr std::uint64_t k_nonce = 5;
  static constexpr ConnectionId k_connection = 1;

 private:
  KeyExchangePair key_{seed_of(40)};
  KeyExchangePair ephemeral_{seed_of(90)};
  std::optional<PacketProtection> traffic_;
};

HostProtocol make_host() {
  HostProtocolConfig c;
  c.players = k_players;
  c.start_with = 2;
  c.end_tick = 200;
  c.input_bytes = k_input_bytes;
  c.neutral_input = std::vector<std::byte>(k_input_bytes);
  c.sim_name = "fuzz";
  c.test_key_seed = 7;
  c.resync = true;
  c.credentials.open = true;
  return HostProtocol(c, Instant{0});
}

PeerProtocol make_peer() {
  PeerProtocolConfig c;
  c.host = k_host_at;
  c.input_bytes = k_input_bytes;
  c.neutral_input = std::vector<std::byte>(k_input_bytes);
  c.sim_name = "fuzz";
  c.nonce = HandHost::k_nonce;
  c.test_key_seed = 11;
  return PeerProtocol(c, Instant{0});
}

/// The hand joiner through the host's handshake; false if the host did not welcome it.
bool join(HostProtocol& host, lockstep::testing::HandJoiner& hand, Instant now) {
  host.receive(k_joiner_at, hand.hello(), now);
  if (host.outbox().pending().empty()) return false;
  std::optional<std::vector<std::byte>> connect = hand.connect(host.outbox().pending().back().bytes);
  host.outbox().clear();
  if (!connect) return false;
  host.receive(k_joiner_at, *connect, now);
  for (const Transmit& t : host.outbox().pending()) {
    std::vector<std::byte> d = t.bytes;
    if (hand.open(d) && hand.connection != 0) {
      host.outbox().clear();
      return true;
    }
  }
  return false;
}

void check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in{std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size)};
  HostProtocol host = make_host();
  PeerProtocol peer = make_peer();
  lockstep::testing::HandJoiner hand(0x77, Role::player);
  HandHost hand_host;
  Instant now{1000};
  peer.poll(now);
  check(join(host, hand, now));
  check(hand_host.welcome(peer, now));
  std::vector<std::byte> d;
  while (in.at < in.data.size()) {
    const std::uint8_t selector = in.u8();
    now += std::chrono::milliseconds(in.u8());
    Bytes record{in.take(in.u8())};
    const bool to_peer = (selector & 1) != 0;
    const auto type = static_cast<MessageType>(1 + (selector >> 2) % static_cast<std::uint8_t>(MessageType::last));
    if (to_peer) {
      const std::uint64_t number = hand_host.next_number();
      if ((selector & 2) != 0) {
        write_structured(d, type, HandHost::k_connection, number, record);
      } else {
        write_sealed_header(d, type, HandHost::k_connection, number);
        const std::span<const std::byte> rest = record.take(k_max_datagram_bytes);
        d.insert(d.end(), rest.begin(), rest.end());
      }
      hand_host.seal(d);
      peer.receive(k_host_at, d, now);
    } else {
      d = hand.sealed(type, [&](std::vector<std::byte>& out, const Header& h) {
        if ((selector & 2) != 0) return write_structured(out, type, h.connection, h.number, record);
        write_sealed_header(out, type, h.connection, h.number);
        const std::span<const std::byte> rest = record.take(k_max_datagram_bytes);
        out.insert(out.end(), rest.begin(), rest.end());
      });
      host.receive(k_joiner_at, d, now);
    }
    host.poll(now);
    peer.poll(now);
    check(host.outbox().pending().size() < 4096 && peer.outbox().pending().size() < 4096);
    host.outbox().clear();
    peer.outbox().clear();
  }
  return 0;
}
