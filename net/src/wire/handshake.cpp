// The handshake's messages on the wire: hello, challenge, connect, welcome and refusals.

#include "lockstep/net/wire/wire.hpp"

#include "wire_codec.hpp"

namespace lockstep::net {

using namespace wire_codec;

void write_hello(std::vector<std::byte>& out, const Header& h, const Hello& m) {
  ByteWriter w = start_datagram(out, h, MessageType::hello);
  w.u64(m.nonce);
  out.resize(k_hello_bytes, std::byte{0});  // padding: see k_hello_bytes
}

void write_challenge(std::vector<std::byte>& out, const Header& h, const Challenge& m) {
  ByteWriter w = start_datagram(out, h, MessageType::challenge);
  w.u64(m.nonce);
  w.bytes(m.cookie);
  w.bytes(m.host_key);
}

void write_connect(std::vector<std::byte>& out, const Header& h, const Connect& m) {
  ByteWriter w = start_datagram(out, h, MessageType::connect);
  w.u8(static_cast<std::uint8_t>(m.kind));
  w.u64(m.nonce);
  w.bytes(m.cookie);
  w.bytes(m.joiner_key);
  if (m.kind == CredentialKind::token) w.bytes(m.token);
  if (m.kind == CredentialKind::migration) w.u16(m.migration_slot);
  w.u8(static_cast<std::uint8_t>(m.role));
  if (m.kind == CredentialKind::migration) {
    // The claim's place holds the resumption: the session, the slot again, the ticks it holds.
    w.u64(m.resume_session);
    w.u16(m.migration_slot);
    w.u64(m.resume_through);
    return;
  }
  const Reclaim reclaim = m.reclaim.value_or(Reclaim{});
  w.u64(reclaim.session);
  w.u16(reclaim.slot);
  w.u64(reclaim.key);
}

void write_welcome(std::vector<std::byte>& out, const Header& h, const Welcome& m) {
  ByteWriter w = start_datagram(out, h, MessageType::welcome);
  w.bytes(m.host_ephemeral);
  w.u64(m.nonce);
  w.u64(m.session);
  w.u16(m.slot);
  w.u16(m.players);
  w.u8(m.input_bytes);
  w.u16(m.tick_rate_hz);
  w.u8(m.input_delay);
  varint(w, m.end_tick);
  w.u64(m.seed);
  w.text(m.sim_name.size() > k_max_sim_name ? m.sim_name.substr(0, k_max_sim_name) : m.sim_name);
  w.u64(m.compatibility_id);
  w.u16(static_cast<std::uint16_t>(m.config.size()));
  w.bytes(m.config);
  varint(w, m.start_tick);
  if (m.start_tick != 0) {
    varint(w, m.state_bytes);
    w.u64(m.state_hash);
  }
  w.u8(static_cast<std::uint8_t>((m.late ? k_late : 0) | (m.resync ? k_resync : 0) |
                                 (m.prediction_window != 0 ? k_predicts : 0) | (m.resumed_through ? k_resumed : 0)));
  w.u64(m.reconnect_key);
  if (m.prediction_window != 0) w.u8(m.prediction_window);
  if (m.resumed_through) varint(w, *m.resumed_through);
}

namespace {

void write_refuse_body(ByteWriter& w, const Refuse& m) {
  w.u8(static_cast<std::uint8_t>(m.reason));
  w.u8(m.host_version);
  w.u64(m.nonce);
  if (m.reason == RefuseReason::busy) w.u16(m.retry_ms);
  w.text(m.text.size() > k_max_refusal_text ? m.text.substr(0, k_max_refusal_text) : m.text);
}

}  // namespace

void write_refuse(std::vector<std::byte>& out, const Header& h, const Refuse& m) {
  ByteWriter w = start_datagram(out, h, MessageType::refuse);
  write_refuse_body(w, m);
}

void write_clear_refusal(std::vector<std::byte>& out, const Refuse& m) {
  out.clear();
  ByteWriter w(out);
  w.u16(k_wire_magic);
  w.u8(k_protocol_version);
  w.u8(static_cast<std::uint8_t>(MessageType::refuse));
  w.u8(0);
  w.u16(0);
  write_refuse_body(w, m);
}

void write_version_refusal(std::vector<std::byte>& out) { write_clear_refusal(out, Refuse{RefuseReason::version, k_protocol_version, 0, {}, 0}); }

Decoded<Hello> read_hello(std::span<const std::byte> d) {
  WireReader r(d);
  Hello m;
  m.nonce = r.u64();
  // The padding: exactly k_hello_bytes in all, so every hello can pay for its answer.
  if (d.size() != k_hello_bytes) r.fail();
  else (void)r.bytes(k_hello_bytes - k_header_bytes - 8);
  return finish(r, m);
}

Decoded<Challenge> read_challenge(std::span<const std::byte> d) {
  WireReader r(d);
  Challenge m;
  m.nonce = r.u64();
  copy_into(m.cookie, r.bytes(k_cookie_bytes));
  copy_into(m.host_key, r.bytes(k_key_exchange_bytes));
  return finish(r, m);
}

Decoded<Connect> read_connect_clear(std::span<const std::byte> d) {
  WireReader r(d);
  Connect m;
  const std::uint8_t kind = r.u8();
  if (kind > static_cast<std::uint8_t>(CredentialKind::migration)) {
    Decoded<Connect> out;
    out.drop = DropReason::malformed;
    return out;
  }
  m.kind = static_cast<CredentialKind>(kind);
  m.nonce = r.u64();
  copy_into(m.cookie, r.bytes(k_cookie_bytes));
  copy_into(m.joiner_key, r.bytes(k_key_exchange_bytes));
  if (m.kind == CredentialKind::token) copy_into(m.token, r.bytes(k_token_blob_bytes));
  if (m.kind == CredentialKind::migration) {
    m.migration_slot = r.u16();
    if (m.migration_slot >= k_max_session_players && m.migration_slot != k_no_slot) r.fail();
  }
  // The sealed part, still sealed (exactly its plaintext and the tag), then the MAC.
  if (d.size() != connect_mac_offset(m.kind) + k_connect_mac_bytes) {
    r.fail();
  } else {
    (void)r.bytes(k_connect_sealed_bytes + k_packet_tag_bytes);
    copy_into(m.mac, r.bytes(k_connect_mac_bytes));
  }
  return finish(r, m);
}

Decoded<Connect> read_connect_sealed(std::span<const std::byte> opened, const Connect& clear) {
  WireReader r(opened, connect_sealed_offset(clear.kind));
  Connect m = clear;
  const std::uint8_t role = r.u8();
  if (role > static_cast<std::uint8_t>(Role::spectator)) r.fail();
  m.role = static_cast<Role>(role);
  if (m.kind == CredentialKind::migration) {
    m.resume_session = r.u64();
    const Slot slot = r.u16();
    m.resume_through = r.u64();
    if (slot != m.migration_slot || (m.role == Role::player) != (slot != k_no_slot) || m.resume_through >= k_tick_limit) {
      r.fail();
    }
    return finish(r, m);
  }
  Reclaim reclaim;
  reclaim.session = r.u64();
  reclaim.slot = r.u16();
  reclaim.key = r.u64();
  if (reclaim.key != 0) {
    if (m.role != Role::player || reclaim.slot >= k_max_session_players) r.fail();
    m.reclaim = reclaim;
  } else if (reclaim != Reclaim{}) {
    r.fail();
  }
  return finish(r, m);
}

Decoded<Welcome> read_welcome(std::span<const std::byte> d) {
  WireReader r(d);
  Welcome m;
  copy_into(m.host_ephemeral, r.bytes(k_key_exchange_bytes));
  m.nonce = r.u64();
  m.session = r.u64();
  m.slot = r.u16();
  m.players = r.u16();
  m.input_bytes = r.u8();
  m.tick_rate_hz = r.u16();
  m.input_delay = r.u8();
  m.end_tick = r.tick();
  m.seed = r.u64();
  m.sim_name = r.text(k_max_sim_name);
  m.compatibility_id = r.u64();
  const std::uint16_t config_bytes = r.u16();
  if (config_bytes > k_max_config_bytes) r.fail();
  else {
    const std::span<const std::byte> config = r.bytes(config_bytes);
    m.config.assign(config.begin(), config.end());
  }
  m.start_tick = r.tick();
  if (m.start_tick != 0) {
    m.state_bytes = r.varint();
    m.state_hash = r.u64();
    if (m.start_tick > m.end_tick || m.state_bytes < 1 || m.state_bytes > k_max_state_transfer_bytes) r.fail();
  }
  const std::uint8_t flags = r.u8();
  if ((flags & ~(k_late | k_resync | k_predicts | k_resumed)) != 0) r.fail();
  m.late = (flags & k_late) != 0;
  m.resync = (flags & k_resync) != 0;
  m.reconnect_key = r.u64();
  if ((flags & k_predicts) != 0) {
    m.prediction_window = r.u8();
    if (m.prediction_window < 1 || m.prediction_window > k_max_prediction_window) r.fail();
  }
  if ((flags & k_resumed) != 0) m.resumed_through = r.tick();
  if ((m.late || m.reconnect_key != 0) && m.slot == k_no_slot) r.fail();
  if (m.players < 1 || m.players > k_max_session_players || m.input_bytes < 1 || m.input_bytes > k_max_input_bytes ||
      std::uint32_t{m.players} * m.input_bytes > k_max_tick_input_bytes ||
      m.tick_rate_hz < 1 || m.tick_rate_hz > k_max_tick_rate_hz || m.end_tick < 1 || m.input_delay > k_max_input_delay ||
      (m.slot != k_no_slot && m.slot >= m.players)) {
    r.fail();
  }
  return finish(r, std::move(m));
}

Decoded<Refuse> read_refuse(std::span<const std::byte> d) {
  WireReader r(d);
  Refuse m;
  const std::uint8_t reason = r.u8();
  if (reason < static_cast<std::uint8_t>(RefuseReason::version) || reason > static_cast<std::uint8_t>(RefuseReason::busy)) {
    r.fail();
  }
  m.reason = static_cast<RefuseReason>(reason);
  m.host_version = r.u8();
  m.nonce = r.u64();
  if (m.reason == RefuseReason::busy) m.retry_ms = r.u16();
  m.text = r.text(k_max_refusal_text);
  return finish(r, std::move(m));
}

}  // namespace lockstep::net
