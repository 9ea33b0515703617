// A relay's inputs as changes: each tick's inputs coded against the tick before, so that inputs
// held for many ticks (bots, and people holding keys) cost next to nothing.

#include <algorithm>

#include "lockstep/net/wire/wire.hpp"

#include "wire_codec.hpp"

namespace lockstep::net {

using namespace wire_codec;

namespace {

std::size_t varint_bytes(std::uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

}  // namespace

void write_tick_changes(std::vector<std::byte>& out, std::span<const std::byte> before, std::span<const std::byte> tick,
                        std::uint32_t players, std::uint32_t input_bytes) {
  const auto input = [&](std::span<const std::byte> of, std::uint32_t slot) {
    return of.subspan(static_cast<std::size_t>(slot) * input_bytes, input_bytes);
  };
  const auto changed = [&](std::uint32_t slot) { return !std::ranges::equal(input(before, slot), input(tick, slot)); };
  // The smaller of a list of changed slots (each as its distance from the one after the previous)
  // and a bitmap of them.
  std::uint32_t count = 0;
  std::size_t list_bytes = 0;
  std::uint32_t next = 0;
  for (std::uint32_t p = 0; p < players; ++p) {
    if (!changed(p)) continue;
    ++count;
    list_bytes += varint_bytes(p - next);
    next = p + 1;
  }
  const bool bitmap = varint_bytes(players + 1ull) + (players + 7) / 8 < varint_bytes(count) + list_bytes;
  ByteWriter w(out);
  if (bitmap) {
    varint(w, players + 1ull);
    std::vector<std::uint8_t> bits((players + 7) / 8);
    for (std::uint32_t p = 0; p < players; ++p) {
      if (changed(p)) bits[p / 8] = static_cast<std::uint8_t>(bits[p / 8] | (1u << (p % 8)));
    }
    for (const std::uint8_t b : bits) w.u8(b);
  } else {
    varint(w, count);
  }
  next = 0;
  for (std::uint32_t p = 0; p < players; ++p) {
    if (!changed(p)) continue;
    if (!bitmap) varint(w, p - next);
    w.bytes(input(tick, p));
    next = p + 1;
  }
}

bool expand_relay_inputs(const Relay& m, const RelayShape& shape, std::span<const std::byte> reference,
                         std::vector<std::byte>& out) {
  const std::size_t stride = static_cast<std::size_t>(shape.players) * shape.input_bytes;
  out.clear();
  if (reference.size() != stride || shape.input_bytes > k_max_input_bytes) return false;
  WireReader r(WireReader::Part{}, m.inputs);
  out.resize(m.input_ticks * stride);
  for (std::uint32_t t = 0; t < m.input_ticks; ++t) {
    // Each tick starts as the one before (the reference for the first), then takes its changes.
    std::byte* const tick = out.data() + static_cast<std::size_t>(t) * stride;
    if (t == 0) std::copy(reference.begin(), reference.end(), tick);
    else std::copy(tick - stride, tick, tick);
    read_tick_changes(r, shape.players, shape.input_bytes, [&](std::uint32_t slot, std::span<const std::byte> input) {
      // At most an input's bytes, as the compiler can see (read_tick_changes gives exactly that).
      const std::size_t n = std::min<std::size_t>(input.size(), k_max_input_bytes);
      std::copy_n(input.data(), n, tick + static_cast<std::size_t>(slot) * shape.input_bytes);
    });
  }
  return r.complete();
}

}  // namespace lockstep::net
