#pragma once
// A joiner written by hand, for tests that misbehave on purpose (a squatter, a mute player, a
// spectator that sends inputs): the hello, the connect that answers a challenge, and messages
// sealed and opened under its connection's keys, exactly as net/PROTOCOL.md describes them.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::testing {

class HandJoiner {
 public:
  explicit HandJoiner(std::uint64_t nonce, net::Role role = net::Role::player, net::JoinCredential credential = {})
      : nonce_(nonce), role_(role), credential_(credential), key_(seed(nonce)) {}

  [[nodiscard]] std::vector<std::byte> hello() const {
    std::vector<std::byte> d;
    net::write_hello(d, {net::MessageType::hello, 0, 0}, {nonce_});
    return d;
  }

  /// The connect that answers `datagram` when it is this joiner's challenge.
  std::optional<std::vector<std::byte>> connect(std::span<const std::byte> datagram,
                                                std::optional<net::Reclaim> reclaim = std::nullopt) {
    const net::Decoded<net::Header> h = net::read_header(datagram);
    if (!h || h->type != net::MessageType::challenge) return std::nullopt;
    const net::Decoded<net::Challenge> c = net::read_challenge(datagram);
    if (!c || c->nonce != nonce_) return std::nullopt;
    if (!handshake_) {
      std::optional<net::ConnectionKeys> keys = net::ConnectionKeys::for_joiner(key_, c->host_key, credential_.secret);
      if (!keys) return std::nullopt;
      handshake_.emplace(std::move(*keys));
    }
    net::Connect m;
    m.kind = credential_.kind;
    m.nonce = nonce_;
    m.cookie = c->cookie;
    m.joiner_key = key_.public_key();
    m.token = credential_.token;
    m.role = role_;
    m.reclaim = reclaim;
    std::vector<std::byte> d;
    net::write_connect(d, {net::MessageType::connect, 0, static_cast<std::uint16_t>(handshake_->next_number())}, m);
    net::seal_connect(*handshake_, d, net::connect_sealed_offset(m.kind), credential_.secret, c->host_key);
    return d;
  }

  /// Opens a datagram from the host in place (header and plaintext after): its header, or nothing
  /// when it does not open. A welcome tells this joiner its connection id.
  std::optional<net::Header> open(std::vector<std::byte>& datagram) {
    const net::Decoded<net::Header> h = net::read_header(datagram);
    if (!h || !handshake_ || !net::is_sealed(h->type) || h->clear) return std::nullopt;
    if (h->type == net::MessageType::refuse || h->type == net::MessageType::welcome) {
      if (!net::open_once(datagram, net::k_sealed_header_bytes, handshake_->keys())) return std::nullopt;
      if (h->type == net::MessageType::welcome && !protection_) {
        const net::Decoded<net::Welcome> w = net::read_welcome(datagram);
        if (!w) return std::nullopt;
        std::optional<net::ConnectionKeys> keys = net::ConnectionKeys::for_joiner(
            key_, w->host_ephemeral, net::traffic_secret(credential_.secret, handshake_->keys()));
        if (!keys) return std::nullopt;
        protection_.emplace(std::move(*keys));
        connection = h->connection;
      }
      return h.value;
    }
    if (!protection_ ||
        protection_->open(datagram, net::k_sealed_header_bytes, protection_->received_number(h->number)) != net::OpenOutcome::opened) {
      return std::nullopt;
    }
    return h.value;
  }

  /// A message written by `write(out, header)`, sealed as this joiner's next datagram.
  template <class Write>
  std::vector<std::byte> sealed(net::MessageType type, Write&& write) {
    std::vector<std::byte> d;
    write(d, net::Header{type, connection, static_cast<std::uint16_t>(protection_->next_number())});
    protection_->seal(d, net::k_sealed_header_bytes);
    return d;
  }

  net::ConnectionId connection = 0;  ///< the welcome's, once it opened

 private:
  static std::array<std::byte, net::k_key_exchange_bytes> seed(std::uint64_t nonce) {
    std::array<std::byte, net::k_key_exchange_bytes> s{};
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>((nonce >> (8 * (i % 8))) + i);
    return s;
  }

  std::uint64_t nonce_;
  net::Role role_;
  net::JoinCredential credential_;
  net::KeyExchangePair key_;
  std::optional<net::PacketProtection> handshake_;
  std::optional<net::PacketProtection> protection_;
};

}  // namespace lockstep::testing
