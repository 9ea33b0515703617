#include "lockstep/net/wire.hpp"

#include "lockstep/engine/byte_io.hpp"

namespace lockstep::net {
namespace {

constexpr std::uint64_t k_max_tick = 1ull << 40;

ByteWriter start_datagram(std::vector<std::byte>& out, const Header& h, MessageType type) {
  out.clear();
  ByteWriter w(out);
  w.u32(k_wire_magic);
  w.u16(k_protocol_version);
  w.u8(static_cast<std::uint8_t>(type));
  w.u8(h.slot);
  w.u64(h.session);
  w.u64(h.token);
  w.u32(h.sequence);
  return w;
}

void write_timing(ByteWriter& w, const Timing& t) {
  w.u32(t.sent_ms);
  w.u32(t.echo_ms);
  w.u32(t.echo_held_ms);
}

Timing read_timing(ByteReader& r) {
  Timing t;
  t.sent_ms = r.u32();
  t.echo_ms = r.u32();
  t.echo_held_ms = r.u32();
  return t;
}

ByteReader payload_of(std::span<const std::byte> datagram) {
  return ByteReader(datagram.size() >= k_header_bytes ? datagram.subspan(k_header_bytes) : std::span<const std::byte>{});
}

template <class T>
Result<T> finish(const ByteReader& r, T value, const char* what) {
  if (!r.at_end()) return fail("malformed ", what);
  return value;
}

}  // namespace

void write_hello(std::vector<std::byte>& out, const Header& h, const Hello& m) {
  ByteWriter w = start_datagram(out, h, MessageType::hello);
  w.u16(m.protocol_version);
  w.u8(static_cast<std::uint8_t>(m.role));
  w.u64(m.cookie);
}

void write_challenge(std::vector<std::byte>& out, const Header& h, const Challenge& m) {
  ByteWriter w = start_datagram(out, h, MessageType::challenge);
  w.u64(m.cookie);
}

void write_welcome(std::vector<std::byte>& out, const Header& h, const Welcome& m) {
  ByteWriter w = start_datagram(out, h, MessageType::welcome);
  w.u8(m.slot);
  w.u64(m.token);
  w.u64(m.session);
  w.u32(m.players);
  w.u32(m.input_bytes);
  w.u32(m.tick_rate_hz);
  w.u32(m.input_delay);
  w.u64(m.end_tick);
  w.u64(m.seed);
  w.u16(static_cast<std::uint16_t>(m.config.size()));
  w.bytes(m.config);
}

void write_refuse(std::vector<std::byte>& out, const Header& h, const Refuse& m) {
  ByteWriter w = start_datagram(out, h, MessageType::refuse);
  w.u8(static_cast<std::uint8_t>(m.reason));
  w.text(m.text.size() > k_max_refusal_text ? m.text.substr(0, k_max_refusal_text) : m.text);
}

void write_start(std::vector<std::byte>& out, const Header& h, const Start& m) {
  ByteWriter w = start_datagram(out, h, MessageType::start);
  w.u32(m.countdown_ms);
}

void write_update(std::vector<std::byte>& out, const Header& h, const Update& m, std::uint32_t input_bytes) {
  ByteWriter w = start_datagram(out, h, MessageType::update);
  w.u64(m.relay_ack);
  w.u64(m.first_tick);
  w.u16(static_cast<std::uint16_t>(m.inputs.size() / input_bytes));
  w.bytes(m.inputs);
  w.u64(m.hash_first_tick);
  w.u16(static_cast<std::uint16_t>(m.hashes.size()));
  for (std::uint64_t hash : m.hashes) w.u64(hash);
  write_timing(w, m.timing);
}

void write_relay(std::vector<std::byte>& out, const Header& h, const Relay& m, std::uint32_t players,
                 std::uint32_t input_bytes) {
  ByteWriter w = start_datagram(out, h, MessageType::relay);
  w.u64(m.input_ack);
  w.u64(m.hash_ack);
  w.u64(m.first_tick);
  w.u16(static_cast<std::uint16_t>(m.inputs.size() / (static_cast<std::size_t>(players) * input_bytes)));
  w.bytes(m.inputs);
  w.u8(static_cast<std::uint8_t>(m.slots.size()));
  for (const SlotStatus& s : m.slots) {
    w.u8(static_cast<std::uint8_t>(s.state));
    w.u64(s.neutral_from_tick);
  }
  w.u64(m.desync_tick);
  write_timing(w, m.timing);
}

void write_bye(std::vector<std::byte>& out, const Header& h, const Bye& m) {
  ByteWriter w = start_datagram(out, h, MessageType::bye);
  w.u64(m.last_tick);
}

Result<Header> read_header(std::span<const std::byte> datagram) {
  if (datagram.size() < k_header_bytes) return fail("short");
  if (datagram.size() > k_max_datagram_bytes) return fail("oversized");
  ByteReader r(datagram.first(k_header_bytes));
  if (r.u32() != k_wire_magic) return fail("bad magic");
  if (r.u16() != k_protocol_version) return fail("bad version");
  Header h;
  const std::uint8_t type = r.u8();
  if (type < 1 || type > static_cast<std::uint8_t>(MessageType::challenge)) return fail("unknown type");
  h.type = static_cast<MessageType>(type);
  h.slot = r.u8();
  h.session = r.u64();
  h.token = r.u64();
  h.sequence = r.u32();
  return h;
}

Result<Hello> read_hello(std::span<const std::byte> datagram) {
  ByteReader r = payload_of(datagram);
  Hello m;
  m.protocol_version = r.u16();
  const std::uint8_t role = r.u8();
  if (role > 1) return fail("malformed hello");
  m.role = static_cast<Role>(role);
  m.cookie = r.u64();
  return finish(r, m, "hello");
}

Result<Challenge> read_challenge(std::span<const std::byte> datagram) {
  ByteReader r = payload_of(datagram);
  Challenge m;
  m.cookie = r.u64();
  return finish(r, m, "challenge");
}

Result<Welcome> read_welcome(std::span<const std::byte> datagram) {
  ByteReader r = payload_of(datagram);
  Welcome m;
  m.slot = r.u8();
  m.token = r.u64();
  m.session = r.u64();
  m.players = r.u32();
  m.input_bytes = r.u32();
  m.tick_rate_hz = r.u32();
  m.input_delay = r.u32();
  m.end_tick = r.u64();
  m.seed = r.u64();
  const std::uint16_t config_bytes = r.u16();
  if (config_bytes > k_max_config_bytes) return fail("malformed welcome: configuration too large");
  std::span<const std::byte> config = r.bytes(config_bytes);
  m.config.assign(config.begin(), config.end());
  if (m.players < 1 || m.players > k_max_players || m.input_bytes < 1 || m.input_bytes > k_max_input_bytes ||
      m.tick_rate_hz < 1 || m.tick_rate_hz > 1000 || m.input_delay > 60 || m.end_tick > k_max_tick ||
      (m.slot != k_no_slot && m.slot >= m.players)) {
    return fail("malformed welcome: values out of range");
  }
  return finish(r, m, "welcome");
}

Result<Refuse> read_refuse(std::span<const std::byte> datagram) {
  ByteReader r = payload_of(datagram);
  Refuse m;
  const std::uint8_t reason = r.u8();
  if (reason < 1 || reason > 4) return fail("malformed refusal");
  m.reason = static_cast<RefuseReason>(reason);
  m.text = r.text(k_max_refusal_text);
  for (char& c : m.text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line, no control characters
  }
  return finish(r, m, "refusal");
}

Result<Start> read_start(std::span<const std::byte> datagram) {
  ByteReader r = payload_of(datagram);
  Start m;
  m.countdown_ms = r.u32();
  if (m.countdown_ms > 10'000) return fail("malformed start");
  return finish(r, m, "start");
}

Result<Update> read_update(std::span<const std::byte> datagram, std::uint32_t input_bytes) {
  ByteReader r = payload_of(datagram);
  Update m;
  m.relay_ack = r.u64();
  m.first_tick = r.u64();
  const std::uint16_t count = r.u16();
  if (count > k_max_ticks_per_datagram) return fail("malformed update: too many ticks");
  std::span<const std::byte> inputs = r.bytes(static_cast<std::size_t>(count) * input_bytes);
  m.inputs.assign(inputs.begin(), inputs.end());
  m.hash_first_tick = r.u64();
  const std::uint16_t hashes = r.u16();
  if (hashes > k_max_ticks_per_datagram) return fail("malformed update: too many hashes");
  for (std::uint16_t i = 0; i < hashes; ++i) m.hashes.push_back(r.u64());
  m.timing = read_timing(r);
  if (m.relay_ack > k_max_tick || m.first_tick > k_max_tick || m.hash_first_tick > k_max_tick) {
    return fail("malformed update: tick out of range");
  }
  return finish(r, m, "update");
}

Result<Relay> read_relay(std::span<const std::byte> datagram, std::uint32_t players, std::uint32_t input_bytes) {
  ByteReader r = payload_of(datagram);
  Relay m;
  m.input_ack = r.u64();
  m.hash_ack = r.u64();
  m.first_tick = r.u64();
  const std::uint16_t count = r.u16();
  if (count > k_max_ticks_per_datagram) return fail("malformed relay: too many ticks");
  std::span<const std::byte> inputs = r.bytes(static_cast<std::size_t>(count) * players * input_bytes);
  m.inputs.assign(inputs.begin(), inputs.end());
  const std::uint8_t slots = r.u8();
  if (slots != players) return fail("malformed relay: slot count");
  for (std::uint8_t s = 0; s < slots; ++s) {
    SlotStatus status;
    const std::uint8_t state = r.u8();
    if (state > static_cast<std::uint8_t>(SlotState::gone)) return fail("malformed relay: slot state");
    status.state = static_cast<SlotState>(state);
    status.neutral_from_tick = r.u64();
    m.slots.push_back(status);
  }
  m.desync_tick = r.u64();
  m.timing = read_timing(r);
  if (m.input_ack > k_max_tick || m.hash_ack > k_max_tick || m.first_tick > k_max_tick || m.desync_tick > k_max_tick) {
    return fail("malformed relay: tick out of range");
  }
  return finish(r, m, "relay");
}

Result<Bye> read_bye(std::span<const std::byte> datagram) {
  ByteReader r = payload_of(datagram);
  Bye m;
  m.last_tick = r.u64();
  return finish(r, m, "bye");
}

}  // namespace lockstep::net
