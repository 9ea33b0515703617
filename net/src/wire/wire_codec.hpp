#pragma once
// What every message family's encoder and decoder share (net/src/wire/*.cpp): the flag bits, LEB128
// varints and zigzag tick offsets, the bounded reader, the datagram's start and the timing fields.
// Internal to lockstep::net.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net::wire_codec {

// Flag bits of updates and relays.
inline constexpr std::uint8_t k_has_timing = 1u << 0;
inline constexpr std::uint8_t k_has_inputs = 1u << 1;
inline constexpr std::uint8_t k_has_hashes = 1u << 2;  // updates
inline constexpr std::uint8_t k_has_slots = 1u << 2;   // relays
inline constexpr std::uint8_t k_has_desync = 1u << 3;  // relays
inline constexpr std::uint8_t k_after_previous = 1u << 4;  // relays: inputs coded against the tick before
inline constexpr std::uint8_t k_running = 1u << 5;     // relays
inline constexpr std::uint8_t k_has_resync = 1u << 6;  // relays
inline constexpr std::uint8_t k_has_decided = 1u << 7;  // relays
inline constexpr std::uint8_t k_has_state = 1u << 3;   // updates
inline constexpr std::uint8_t k_has_path_response = 1u << 4;  // updates
inline constexpr std::uint8_t k_has_succession_ack = 1u << 5;  // updates
inline constexpr std::uint8_t k_update_flags =
    k_has_timing | k_has_inputs | k_has_hashes | k_has_state | k_has_path_response | k_has_succession_ack;
inline constexpr std::uint8_t k_relay_flags =
    k_has_timing | k_has_inputs | k_has_slots | k_has_desync | k_after_previous | k_running | k_has_resync | k_has_decided;
// Welcome flags.
inline constexpr std::uint8_t k_late = 1u << 0;
inline constexpr std::uint8_t k_resync = 1u << 1;
inline constexpr std::uint8_t k_predicts = 1u << 2;
inline constexpr std::uint8_t k_resumed = 1u << 3;      // welcomes: the answer to a migration connect

/// Unsigned LEB128.
inline void varint(ByteWriter& w, std::uint64_t v) {
  while (v >= 0x80) {
    w.u8(static_cast<std::uint8_t>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  w.u8(static_cast<std::uint8_t>(v));
}

/// A signed offset, zigzag-encoded so that small negatives are small too.
inline void offset(ByteWriter& w, std::uint64_t value, std::uint64_t base) {
  const auto d = static_cast<std::int64_t>(value - base);
  varint(w, (static_cast<std::uint64_t>(d) << 1) ^ static_cast<std::uint64_t>(d >> 63));
}

/// The header's length, from its first byte.
inline std::size_t header_size(std::span<const std::byte> d) {
  return !d.empty() && (std::to_integer<std::uint8_t>(d[0]) & k_sealed_type_bit) != 0 ? k_sealed_header_bytes : k_header_bytes;
}

inline std::span<const std::byte> span_from(std::span<const std::byte> d, std::size_t from) {
  return d.size() >= from ? d.subspan(from) : std::span<const std::byte>{};
}

/// Reads what `varint` wrote: at most 6 bytes (values below 2^42), no overlong zero tail.
class WireReader {
 public:
  /// After the header (of whichever layout the first byte says), or from `from`.
  explicit WireReader(std::span<const std::byte> datagram, std::size_t from = 0)
      : r_(span_from(datagram, from != 0 ? from : header_size(datagram))) {}
  /// Over `bytes` as they are: a part of a message, already cut out.
  struct Part {};
  WireReader(Part /*unused*/, std::span<const std::byte> bytes) : r_(bytes) {}

  std::uint8_t u8() { return r_.u8(); }
  std::uint16_t u16() { return r_.u16(); }
  std::uint32_t u32() { return r_.u32(); }
  std::uint64_t u64() { return r_.u64(); }
  std::span<const std::byte> bytes(std::size_t n) { return r_.bytes(n); }
  /// Everything left in the datagram.
  std::span<const std::byte> rest() { return r_.bytes(r_.remaining()); }
  /// Everything left, not read.
  [[nodiscard]] std::span<const std::byte> peek_rest() const {
    ByteReader copy = r_;
    return copy.bytes(copy.remaining());
  }
  [[nodiscard]] std::size_t remaining() const { return r_.remaining(); }
  /// No field so far out of bounds or past the end.
  [[nodiscard]] bool ok() const { return !bad_ && r_.ok(); }
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

inline ByteWriter start_datagram(std::vector<std::byte>& out, const Header& h, MessageType type) {
  out.clear();
  ByteWriter w(out);
  if (is_sealed(type)) {
    w.u8(static_cast<std::uint8_t>(k_sealed_type_bit | static_cast<std::uint8_t>(type)));
    w.u16(h.connection);
  } else {
    w.u16(k_wire_magic);
    w.u8(k_protocol_version);
    w.u8(static_cast<std::uint8_t>(type));
    w.u8(0);  // a clear message has no connection yet
  }
  w.u16(h.number);
  return w;
}

inline void write_timing(ByteWriter& w, const std::optional<Timing>& t) {
  if (!t) return;
  w.u16(t->sent_ms);
  w.u16(t->echo_ms);
  w.u16(t->echo_held_ms);
}

inline std::optional<Timing> read_timing(WireReader& r, bool present) {
  if (!present) return std::nullopt;
  Timing t;
  t.sent_ms = r.u16();
  t.echo_ms = r.u16();
  t.echo_held_ms = r.u16();
  return t;
}

/// Copies exactly as many bytes as `to` holds; a short span (the reader has failed) copies nothing.
template <std::size_t N>
inline void copy_into(std::array<std::byte, N>& to, std::span<const std::byte> from) {
  if (from.size() == N) std::copy(from.begin(), from.end(), to.begin());
}

/// Reads one tick's inputs as changes from the tick before (write_tick_changes): calls
/// `changed(slot, input)` for each changed slot, in slot order. Fails the reader on a slot out of
/// order or past `players`, or a bitmap bit past it.
template <class Changed>
void read_tick_changes(WireReader& r, std::uint32_t players, std::uint32_t input_bytes, Changed&& changed) {
  const std::uint64_t n = r.varint();
  if (n <= players) {
    std::uint64_t slot = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      slot += r.varint();
      const std::span<const std::byte> input = r.bytes(input_bytes);
      if (slot >= players || input.size() != input_bytes) return r.fail();
      changed(static_cast<std::uint32_t>(slot), input);
      ++slot;
    }
  } else if (n == players + 1ull) {
    const std::span<const std::byte> bitmap = r.bytes((players + 7) / 8);
    if (bitmap.size() != (players + 7) / 8) return r.fail();
    for (std::uint32_t slot = 0; slot < bitmap.size() * 8; ++slot) {
      if ((std::to_integer<std::uint8_t>(bitmap[slot / 8]) & (1u << (slot % 8))) == 0) continue;
      const std::span<const std::byte> input = r.bytes(input_bytes);
      if (slot >= players || input.size() != input_bytes) return r.fail();
      changed(slot, input);
    }
  } else {
    r.fail();
  }
}

/// A count of ticks in a datagram: 1 to k_max_ticks_per_datagram, or 0 (and the reader failed).
inline std::uint32_t read_count(WireReader& r) {
  const std::uint8_t n = r.u8();
  if (n == 0 || n > k_max_ticks_per_datagram) {
    r.fail();
    return 0;  // never a count past the bound: callers index fixed arrays with it
  }
  return n;
}


}  // namespace lockstep::net::wire_codec
