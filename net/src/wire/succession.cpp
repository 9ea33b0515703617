// Host migration's messages on the wire: the succession plan, a survivor's handoff of ticks, and a
// successor's word to its lost host.

#include "lockstep/net/wire/wire.hpp"

#include "wire_codec.hpp"

namespace lockstep::net {

using namespace wire_codec;

namespace {

constexpr std::uint8_t k_has_secrets = 1u << 0;
constexpr std::uint8_t k_open = 1u << 0;
constexpr std::uint8_t k_player_invite = 1u << 1;
constexpr std::uint8_t k_spectator_invite = 1u << 2;
constexpr std::uint8_t k_token_key = 1u << 3;
constexpr std::uint8_t k_adaptive_delay = 1u << 0;

void write_secrets(ByteWriter& w, const HostSecrets& s) {
  w.bytes(s.host_key_seed);
  w.bytes(s.migration);
  w.u8(static_cast<std::uint8_t>((s.open ? k_open : 0) | (s.player_invite ? k_player_invite : 0) |
                                 (s.spectator_invite ? k_spectator_invite : 0) | (s.token_key ? k_token_key : 0)));
  if (s.player_invite) w.bytes(*s.player_invite);
  if (s.spectator_invite) w.bytes(*s.spectator_invite);
  if (s.token_key) {
    w.bytes(*s.token_key);
    w.u64(s.host_id);
  }
}

void write_rules(ByteWriter& w, const HostRules& rules) {
  w.u8(rules.adaptive_delay ? k_adaptive_delay : 0);
  varint(w, rules.input_tolerance);
  varint(w, rules.notify_ms);
  varint(w, rules.timeout_ms);
}

HostRules read_rules(WireReader& r) {
  HostRules rules;
  const std::uint8_t flags = r.u8();
  rules.adaptive_delay = (flags & k_adaptive_delay) != 0;
  const std::uint64_t tolerance = r.varint();
  const std::uint64_t notify = r.varint();
  const std::uint64_t timeout = r.varint();
  if ((flags & ~k_adaptive_delay) != 0 || tolerance > k_max_input_tolerance || notify == 0 || notify > k_max_rule_ms ||
      timeout == 0 || timeout > k_max_rule_ms) {
    r.fail();
    return rules;
  }
  rules.input_tolerance = static_cast<std::uint32_t>(tolerance);
  rules.notify_ms = static_cast<std::uint32_t>(notify);
  rules.timeout_ms = static_cast<std::uint32_t>(timeout);
  return rules;
}

template <std::size_t N>
std::array<std::byte, N> read_array(WireReader& r) {
  std::array<std::byte, N> out{};
  copy_into(out, r.bytes(N));
  return out;
}

HostSecrets read_secrets(WireReader& r) {
  HostSecrets s;
  s.host_key_seed = read_array<32>(r);
  s.migration = read_array<k_credential_secret_bytes>(r);
  const std::uint8_t flags = r.u8();
  if ((flags & ~(k_open | k_player_invite | k_spectator_invite | k_token_key)) != 0) r.fail();
  s.open = (flags & k_open) != 0;
  if ((flags & k_player_invite) != 0) s.player_invite = read_array<k_credential_secret_bytes>(r);
  if ((flags & k_spectator_invite) != 0) s.spectator_invite = read_array<k_credential_secret_bytes>(r);
  if ((flags & k_token_key) != 0) {
    s.token_key = read_array<32>(r);
    s.host_id = r.u64();
  }
  return s;
}

}  // namespace

void write_succession(std::vector<std::byte>& out, const Header& h, const Succession& m) {
  ByteWriter w = start_datagram(out, h, MessageType::succession);
  w.u32(m.version);
  w.u16(m.host_slot);
  w.u8(static_cast<std::uint8_t>(m.count));
  for (std::uint32_t i = 0; i < m.count; ++i) {
    const Successor& s = m.successors[i];
    w.u16(s.slot);
    w.u8(s.address.v6 ? 6 : 4);
    w.bytes(std::span<const std::byte>(s.address.address).first(s.address.v6 ? 16 : 4));
    w.u16(s.address.port);
  }
  w.bytes(m.proof);
  w.u8(m.secrets ? k_has_secrets : 0);
  if (m.secrets) {
    write_secrets(w, *m.secrets);
    write_rules(w, m.rules.value_or(HostRules{}));
  }
}

Decoded<Succession> read_succession(std::span<const std::byte> d, std::uint32_t players) {
  WireReader r(d);
  Succession m;
  m.version = r.u32();
  m.host_slot = r.u16();
  m.count = r.u8();
  if (m.version == 0 || m.count > k_max_successors || (m.host_slot != k_no_slot && m.host_slot >= players)) r.fail();
  for (std::uint32_t i = 0; i < m.count && r.ok(); ++i) {
    Successor& s = m.successors[i];
    s.slot = r.u16();
    const std::uint8_t family = r.u8();
    if (family != 4 && family != 6) {
      r.fail();
      break;
    }
    s.address.v6 = family == 6;
    const std::span<const std::byte> address = r.bytes(s.address.v6 ? 16 : 4);
    std::copy(address.begin(), address.end(), s.address.address.begin());
    s.address.port = r.u16();
    if (s.slot >= players || s.slot == m.host_slot || s.address.port == 0) r.fail();
  }
  m.proof = read_array<k_credential_secret_bytes>(r);
  const std::uint8_t flags = r.u8();
  if ((flags & ~k_has_secrets) != 0) r.fail();
  if ((flags & k_has_secrets) != 0) {
    m.secrets = read_secrets(r);
    m.rules = read_rules(r);
  }
  return finish(r, m);
}

void write_handoff(std::vector<std::byte>& out, const Header& h, const Handoff& m) {
  ByteWriter w = start_datagram(out, h, MessageType::handoff);
  varint(w, m.first_tick);
  w.u8(m.after_previous ? 1 : 0);
  w.u8(static_cast<std::uint8_t>(m.input_ticks));
  w.bytes(m.inputs);
}

Decoded<Handoff> read_handoff(std::span<const std::byte> d, const RelayShape& shape) {
  WireReader r(d);
  Handoff m;
  m.first_tick = r.tick();
  const std::uint8_t after_previous = r.u8();
  m.after_previous = after_previous == 1;
  m.input_ticks = read_count(r);
  if (after_previous > 1 || m.first_tick == 0 || shape.players == 0 || shape.input_bytes == 0) r.fail();
  const std::span<const std::byte> from_here = r.peek_rest();
  for (std::uint32_t t = 0; t < m.input_ticks && r.ok(); ++t) {
    read_tick_changes(r, shape.players, shape.input_bytes, [](std::uint32_t, std::span<const std::byte>) {});
  }
  if (r.ok()) m.inputs = from_here.first(from_here.size() - r.remaining());
  return finish(r, m);
}

void write_succeeded(std::vector<std::byte>& out, const Header& h, const Succeeded& m) {
  ByteWriter w = start_datagram(out, h, MessageType::succeeded);
  w.u16(m.slot);
  varint(w, m.tick);
}

Decoded<Succeeded> read_succeeded(std::span<const std::byte> d) {
  WireReader r(d);
  Succeeded m;
  m.slot = r.u16();
  m.tick = r.tick();
  if (m.slot >= k_max_session_players) r.fail();
  return finish(r, m);
}

}  // namespace lockstep::net
