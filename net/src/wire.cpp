#include "lockstep/net/wire.hpp"

#include <algorithm>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"

namespace lockstep::net {
namespace {

// Flag bits of updates and relays.
constexpr std::uint8_t k_has_timing = 1u << 0;
constexpr std::uint8_t k_has_inputs = 1u << 1;
constexpr std::uint8_t k_has_hashes = 1u << 2;  // updates
constexpr std::uint8_t k_has_slots = 1u << 2;   // relays
constexpr std::uint8_t k_has_desync = 1u << 3;  // relays
constexpr std::uint8_t k_omits_own = 1u << 4;   // relays
constexpr std::uint8_t k_running = 1u << 5;     // relays
constexpr std::uint8_t k_has_resync = 1u << 6;  // relays
constexpr std::uint8_t k_has_state = 1u << 3;   // updates
constexpr std::uint8_t k_has_path_response = 1u << 4;  // updates
constexpr std::uint8_t k_update_flags = k_has_timing | k_has_inputs | k_has_hashes | k_has_state | k_has_path_response;
constexpr std::uint8_t k_relay_flags =
    k_has_timing | k_has_inputs | k_has_slots | k_has_desync | k_omits_own | k_running | k_has_resync;
// Welcome flags.
constexpr std::uint8_t k_late = 1u << 0;
constexpr std::uint8_t k_resync = 1u << 1;
constexpr std::uint8_t k_predicts = 1u << 2;

/// Unsigned LEB128.
void varint(ByteWriter& w, std::uint64_t v) {
  while (v >= 0x80) {
    w.u8(static_cast<std::uint8_t>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  w.u8(static_cast<std::uint8_t>(v));
}

/// A signed offset, zigzag-encoded so that small negatives are small too.
void offset(ByteWriter& w, std::uint64_t value, std::uint64_t base) {
  const auto d = static_cast<std::int64_t>(value - base);
  varint(w, (static_cast<std::uint64_t>(d) << 1) ^ static_cast<std::uint64_t>(d >> 63));
}

/// The header's length, from its first byte.
std::size_t header_size(std::span<const std::byte> d) {
  return !d.empty() && (std::to_integer<std::uint8_t>(d[0]) & k_sealed_type_bit) != 0 ? k_sealed_header_bytes : k_header_bytes;
}

std::span<const std::byte> span_from(std::span<const std::byte> d, std::size_t from) {
  return d.size() >= from ? d.subspan(from) : std::span<const std::byte>{};
}

/// Reads what `varint` wrote: at most 6 bytes (values below 2^42), no overlong zero tail.
class WireReader {
 public:
  /// After the header (of whichever layout the first byte says), or from `from`.
  explicit WireReader(std::span<const std::byte> datagram, std::size_t from = 0)
      : r_(span_from(datagram, from != 0 ? from : header_size(datagram))) {}

  std::uint8_t u8() { return r_.u8(); }
  std::uint16_t u16() { return r_.u16(); }
  std::uint32_t u32() { return r_.u32(); }
  std::uint64_t u64() { return r_.u64(); }
  std::span<const std::byte> bytes(std::size_t n) { return r_.bytes(n); }
  /// Everything left in the datagram.
  std::span<const std::byte> rest() { return r_.bytes(r_.remaining()); }
  std::string text(std::size_t max) { return r_.text(max); }

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int i = 0; i < 6; ++i) {
      const std::uint8_t b = r_.u8();
      v |= static_cast<std::uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) {
        if (b == 0 && i > 0) bad_ = true;  // overlong
        return v;
      }
    }
    bad_ = true;
    return 0;
  }

  /// A tick: base + a signed offset, checked to land in [0, k_tick_limit).
  std::uint64_t tick(std::uint64_t base) {
    const std::uint64_t z = varint();
    const auto d = static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
    const auto value = static_cast<std::int64_t>(base) + d;
    if (value < 0 || static_cast<std::uint64_t>(value) >= k_tick_limit) bad_ = true;
    return bad_ ? 0 : static_cast<std::uint64_t>(value);
  }
  std::uint64_t tick() {
    const std::uint64_t v = varint();
    if (v >= k_tick_limit) bad_ = true;
    return v;
  }

  void fail() { bad_ = true; }
  /// Everything read, nothing left over, every field in bounds.
  [[nodiscard]] bool complete() const { return !bad_ && r_.ok() && r_.at_end(); }

 private:
  ByteReader r_;
  bool bad_ = false;
};

template <class T>
Decoded<T> finish(const WireReader& r, T value) {
  Decoded<T> out;
  if (!r.complete()) {
    out.drop = DropReason::malformed;
    return out;
  }
  out.value = std::move(value);
  return out;
}

ByteWriter start_datagram(std::vector<std::byte>& out, const Header& h, MessageType type) {
  out.clear();
  ByteWriter w(out);
  if (is_sealed(type)) {
    w.u8(static_cast<std::uint8_t>(k_sealed_type_bit | static_cast<std::uint8_t>(type)));
  } else {
    w.u16(k_wire_magic);
    w.u8(k_protocol_version);
    w.u8(static_cast<std::uint8_t>(type));
  }
  w.u8(h.connection);
  w.u16(h.number);
  return w;
}

void write_timing(ByteWriter& w, const std::optional<Timing>& t) {
  if (!t) return;
  w.u16(t->sent_ms);
  w.u16(t->echo_ms);
  w.u16(t->echo_held_ms);
}

std::optional<Timing> read_timing(WireReader& r, bool present) {
  if (!present) return std::nullopt;
  Timing t;
  t.sent_ms = r.u16();
  t.echo_ms = r.u16();
  t.echo_held_ms = r.u16();
  return t;
}

/// Copies exactly as many bytes as `to` holds; a short span (the reader has failed) copies nothing.
template <std::size_t N>
void copy_into(std::array<std::byte, N>& to, std::span<const std::byte> from) {
  if (from.size() == N) std::copy(from.begin(), from.end(), to.begin());
}

/// A count of ticks in a datagram: 1 to k_max_ticks_per_datagram, or 0 (and the reader failed).
std::uint32_t read_count(WireReader& r) {
  const std::uint8_t n = r.u8();
  if (n == 0 || n > k_max_ticks_per_datagram) {
    r.fail();
    return 0;  // never a count past the bound: callers index fixed arrays with it
  }
  return n;
}

}  // namespace

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
  w.u8(static_cast<std::uint8_t>(m.role));
  const Reclaim reclaim = m.reclaim.value_or(Reclaim{});
  w.u64(reclaim.session);
  w.u8(reclaim.slot);
  w.u64(reclaim.key);
}

void write_welcome(std::vector<std::byte>& out, const Header& h, const Welcome& m) {
  ByteWriter w = start_datagram(out, h, MessageType::welcome);
  w.bytes(m.host_ephemeral);
  w.u64(m.nonce);
  w.u64(m.session);
  w.u8(m.slot);
  w.u8(m.players);
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
                                 (m.prediction_window != 0 ? k_predicts : 0)));
  w.u64(m.reconnect_key);
  if (m.prediction_window != 0) w.u8(m.prediction_window);
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

void write_start(std::vector<std::byte>& out, const Header& h, const Start& m) {
  ByteWriter w = start_datagram(out, h, MessageType::start);
  w.u16(m.countdown_ms);
  w.u8(m.input_delay);
}

void write_update(std::vector<std::byte>& out, const Header& h, const Update& m, std::uint32_t input_bytes) {
  ByteWriter w = start_datagram(out, h, MessageType::update);
  const bool inputs = !m.inputs.empty();
  const bool hashes = m.hash_count > 0;
  w.u8(static_cast<std::uint8_t>((m.timing ? k_has_timing : 0) | (inputs ? k_has_inputs : 0) |
                                 (hashes ? k_has_hashes : 0) | (m.state_received ? k_has_state : 0) |
                                 (m.path_response ? k_has_path_response : 0)));
  varint(w, m.relay_ack);
  varint(w, m.slots_ack);
  if (inputs) {
    offset(w, m.inputs_first_tick, m.relay_ack);
    w.u8(static_cast<std::uint8_t>(m.inputs.size() / input_bytes));
    w.bytes(m.inputs);
  }
  if (hashes) {
    offset(w, m.hashes_first_tick, m.relay_ack);
    w.u8(static_cast<std::uint8_t>(m.hash_count));
    for (std::uint32_t i = 0; i < m.hash_count; ++i) w.u32(m.hashes[i]);
  }
  if (m.state_received) {
    varint(w, m.state_tick);
    varint(w, *m.state_received);
    w.u64(m.state_held);
  }
  write_timing(w, m.timing);
  if (m.path_response) w.u64(*m.path_response);
}

void write_relay(std::vector<std::byte>& out, const Header& h, const Relay& m, const RelayShape& shape) {
  const std::uint32_t players = shape.players;
  const std::uint32_t input_bytes = shape.input_bytes;
  ByteWriter w = start_datagram(out, h, MessageType::relay);
  const bool inputs = !m.inputs.empty();
  w.u8(static_cast<std::uint8_t>((m.timing ? k_has_timing : 0) | (inputs ? k_has_inputs : 0) |
                                 (m.slots_version ? k_has_slots : 0) | (m.desync_tick != 0 ? k_has_desync : 0) |
                                 (m.own_slot_omitted ? k_omits_own : 0) | (m.running ? k_running : 0) |
                                 (m.resync ? k_has_resync : 0)));
  varint(w, m.first_tick);
  offset(w, m.input_ack, m.first_tick);
  offset(w, m.hash_ack, m.first_tick);
  if (inputs) {
    const std::uint32_t stride = (players - (m.own_slot_omitted ? 1 : 0)) * input_bytes;
    w.u8(static_cast<std::uint8_t>(m.inputs.size() / stride));
    w.bytes(m.inputs);
  }
  if (m.slots_version) {
    varint(w, *m.slots_version);
    for (std::uint32_t p = 0; p < players; ++p) {
      w.u8(static_cast<std::uint8_t>(m.slots[p].state));
      if (m.slots[p].state == SlotState::gone) varint(w, m.slots[p].neutral_from_tick);
      if (m.slots[p].state == SlotState::active || m.slots[p].state == SlotState::interrupted) {
        varint(w, m.slots[p].plays_from_tick);
      }
    }
    w.u8(m.input_delay);
    varint(w, m.delay_from_tick);
  }
  if (m.desync_tick != 0) offset(w, m.desync_tick, m.first_tick);
  if (m.resync) {
    varint(w, m.resync->tick);
    varint(w, m.resync->bytes);
    w.u64(m.resync->hash);
  }
  write_timing(w, m.timing);
  if (m.timing && shape.predicts) w.u8(static_cast<std::uint8_t>(m.lead));
}

void write_bye(std::vector<std::byte>& out, const Header& h, const Bye& m) {
  ByteWriter w = start_datagram(out, h, MessageType::bye);
  varint(w, m.last_tick);
}

void write_path(std::vector<std::byte>& out, const Header& h, const PathChallenge& m) {
  ByteWriter w = start_datagram(out, h, MessageType::path);
  w.u64(m.challenge);
}

Decoded<Header> read_header(std::span<const std::byte> d) {
  Decoded<Header> out;
  if (d.size() < header_size(d)) {
    out.drop = DropReason::short_datagram;
    return out;
  }
  if (d.size() > k_max_datagram_bytes) {
    out.drop = DropReason::oversized;
    return out;
  }
  ByteReader r(d);
  if (header_size(d) == k_sealed_header_bytes) {
    const std::uint8_t type = r.u8() & static_cast<std::uint8_t>(~k_sealed_type_bit);
    if (type < static_cast<std::uint8_t>(MessageType::hello) || type > static_cast<std::uint8_t>(MessageType::last) ||
        !is_sealed(static_cast<MessageType>(type))) {
      out.drop = DropReason::unknown_type;
      return out;
    }
    out.value.type = static_cast<MessageType>(type);
    out.value.connection = r.u8();
    out.value.number = r.u16();
    return out;
  }
  if (r.u16() != k_wire_magic) {
    out.drop = DropReason::bad_magic;
    return out;
  }
  if (r.u8() != k_protocol_version) {
    out.drop = DropReason::bad_version;
    return out;
  }
  const std::uint8_t type = r.u8();
  if (type < static_cast<std::uint8_t>(MessageType::hello) || type > static_cast<std::uint8_t>(MessageType::last)) {
    out.drop = DropReason::unknown_type;
    return out;
  }
  out.value.type = static_cast<MessageType>(type);
  out.value.connection = r.u8();
  out.value.number = r.u16();
  out.value.clear = is_sealed(out.value.type);
  return out;
}

std::uint8_t version_of(std::span<const std::byte> d) {
  return d.size() > 2 ? std::to_integer<std::uint8_t>(d[2]) : 0;
}

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
  if (kind > static_cast<std::uint8_t>(CredentialKind::token)) {
    Decoded<Connect> out;
    out.drop = DropReason::malformed;
    return out;
  }
  m.kind = static_cast<CredentialKind>(kind);
  m.nonce = r.u64();
  copy_into(m.cookie, r.bytes(k_cookie_bytes));
  copy_into(m.joiner_key, r.bytes(k_key_exchange_bytes));
  if (m.kind == CredentialKind::token) copy_into(m.token, r.bytes(k_token_blob_bytes));
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
  Reclaim reclaim;
  reclaim.session = r.u64();
  reclaim.slot = r.u8();
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
  m.slot = r.u8();
  m.players = r.u8();
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
  if ((flags & ~(k_late | k_resync | k_predicts)) != 0) r.fail();
  m.late = (flags & k_late) != 0;
  m.resync = (flags & k_resync) != 0;
  m.reconnect_key = r.u64();
  if ((flags & k_predicts) != 0) {
    m.prediction_window = r.u8();
    if (m.prediction_window < 1 || m.prediction_window > k_max_prediction_window) r.fail();
  }
  if ((m.late || m.reconnect_key != 0) && m.slot == k_no_slot) r.fail();
  if (m.players < 1 || m.players > k_max_session_players || m.input_bytes < 1 || m.input_bytes > k_max_input_bytes ||
      m.tick_rate_hz < 1 || m.tick_rate_hz > 1000 || m.end_tick < 1 || m.input_delay > k_max_input_delay ||
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

Decoded<Start> read_start(std::span<const std::byte> d) {
  WireReader r(d);
  Start m;
  m.countdown_ms = r.u16();
  m.input_delay = r.u8();
  if (m.input_delay > k_max_input_delay) r.fail();
  return finish(r, m);
}

Decoded<Update> read_update(std::span<const std::byte> d, std::uint32_t input_bytes) {
  WireReader r(d);
  Update m;
  const std::uint8_t flags = r.u8();
  if ((flags & ~k_update_flags) != 0) r.fail();
  m.relay_ack = r.tick();
  m.slots_ack = r.varint();
  if ((flags & k_has_inputs) != 0) {
    m.inputs_first_tick = r.tick(m.relay_ack);
    const std::uint32_t count = read_count(r);
    m.inputs = r.bytes(static_cast<std::size_t>(count) * input_bytes);
    if (m.inputs_first_tick == 0) r.fail();
  }
  if ((flags & k_has_hashes) != 0) {
    m.hashes_first_tick = r.tick(m.relay_ack);
    m.hash_count = read_count(r);
    for (std::uint32_t i = 0; i < m.hash_count; ++i) m.hashes[i] = r.u32();
    if (m.hashes_first_tick == 0) r.fail();
  }
  if ((flags & k_has_state) != 0) {
    m.state_tick = r.tick();
    m.state_received = r.varint();
    m.state_held = r.u64();
    if (*m.state_received > k_max_state_transfer_bytes) r.fail();
  }
  m.timing = read_timing(r, (flags & k_has_timing) != 0);
  if ((flags & k_has_path_response) != 0) m.path_response = r.u64();
  return finish(r, m);
}

Decoded<Relay> read_relay(std::span<const std::byte> d, const RelayShape& shape) {
  const std::uint32_t players = shape.players;
  const std::uint32_t input_bytes = shape.input_bytes;
  WireReader r(d);
  Relay m;
  const std::uint8_t flags = r.u8();
  if ((flags & ~k_relay_flags) != 0) r.fail();
  m.own_slot_omitted = (flags & k_omits_own) != 0;
  m.running = (flags & k_running) != 0;
  m.first_tick = r.tick();
  m.input_ack = r.tick(m.first_tick);
  m.hash_ack = r.tick(m.first_tick);
  if ((flags & k_has_inputs) != 0) {
    const std::uint32_t count = read_count(r);
    const std::uint32_t stride = (players - (m.own_slot_omitted ? 1 : 0)) * input_bytes;
    if (stride == 0 || m.first_tick == 0) r.fail();
    else m.inputs = r.bytes(static_cast<std::size_t>(count) * stride);
  }
  if ((flags & k_has_slots) != 0) {
    m.slots_version = r.varint();
    for (std::uint32_t p = 0; p < players && p < k_max_session_players; ++p) {
      const std::uint8_t state = r.u8();
      if (state > static_cast<std::uint8_t>(SlotState::gone)) r.fail();
      m.slots[p].state = static_cast<SlotState>(state);
      if (m.slots[p].state == SlotState::gone) m.slots[p].neutral_from_tick = r.tick();
      if (m.slots[p].state == SlotState::active || m.slots[p].state == SlotState::interrupted) {
        m.slots[p].plays_from_tick = r.tick();
      }
    }
    m.input_delay = r.u8();
    m.delay_from_tick = r.tick();
    if (m.input_delay > k_max_input_delay || m.delay_from_tick == 0) r.fail();
  }
  if ((flags & k_has_desync) != 0) {
    m.desync_tick = r.tick(m.first_tick);
    if (m.desync_tick == 0) r.fail();
  }
  if ((flags & k_has_resync) != 0) {
    StateOffer offer;
    offer.tick = r.tick();
    offer.bytes = r.varint();
    offer.hash = r.u64();
    if (offer.bytes < 1 || offer.bytes > k_max_state_transfer_bytes) r.fail();
    m.resync = offer;
  }
  m.timing = read_timing(r, (flags & k_has_timing) != 0);
  if (m.timing && shape.predicts) m.lead = static_cast<std::int8_t>(r.u8());
  return finish(r, m);
}

std::uint32_t state_piece_checksum(std::span<const std::byte> bytes) {
  return static_cast<std::uint32_t>(xxh3_64(bytes));
}

void write_state(std::vector<std::byte>& out, const Header& h, const StatePiece& m) {
  ByteWriter w = start_datagram(out, h, MessageType::state);
  varint(w, m.offset);
  w.u32(m.checksum);
  w.bytes(m.bytes);
}

Decoded<StatePiece> read_state(std::span<const std::byte> d) {
  WireReader r(d);
  StatePiece m;
  m.offset = r.varint();
  m.checksum = r.u32();
  m.bytes = r.rest();
  if (m.offset % k_state_piece_bytes != 0 || m.offset >= k_max_state_transfer_bytes || m.bytes.empty() ||
      m.bytes.size() > k_state_piece_bytes) {
    r.fail();
  }
  Decoded<StatePiece> out = finish(r, m);
  if (out.ok() && state_piece_checksum(m.bytes) != m.checksum) out.drop = DropReason::bad_checksum;
  return out;
}

Decoded<Bye> read_bye(std::span<const std::byte> d) {
  WireReader r(d);
  Bye m;
  m.last_tick = r.tick();
  return finish(r, m);
}

Decoded<PathChallenge> read_path(std::span<const std::byte> d) {
  WireReader r(d);
  PathChallenge m;
  m.challenge = r.u64();
  if (m.challenge == 0) r.fail();
  return finish(r, m);
}

}  // namespace lockstep::net
