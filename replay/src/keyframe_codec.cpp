#include "lockstep/replay/keyframe_codec.hpp"

#include "lockstep/engine/byte_io.hpp"

namespace lockstep::replay {
namespace {

/// Byte i of the regrouped order is byte at(i) of the snapshot: all first bytes of each 8-byte
/// word, then all second bytes, …, then the bytes past the last whole word as they are.
struct Planes {
  explicit Planes(std::size_t size) : words(size / 8), whole(size / 8 * 8) {}
  [[nodiscard]] std::size_t at(std::size_t i) const {
    if (i >= whole) return i;
    return (i % words) * 8 + i / words;
  }
  std::size_t words;
  std::size_t whole;
};

}  // namespace

void encode_keyframe_delta(std::span<const std::byte> snapshot, std::span<const std::byte> first,
                           std::vector<std::byte>& out) {
  const std::size_t size = snapshot.size();
  const Planes planes(size);
  auto delta = [&](std::size_t i) {
    const std::size_t j = planes.at(i);
    return snapshot[j] ^ first[j];
  };
  // (zero run, literal run, the literal bytes), until the end: a literal run ends where two zero
  // bytes begin, so a lone zero inside changing bytes does not cost a pair of counts.
  ByteWriter w(out);
  std::size_t i = 0;
  while (i < size) {
    const std::size_t zeros_from = i;
    while (i < size && delta(i) == std::byte{0}) ++i;
    const std::size_t literal_from = i;
    while (i < size && !(delta(i) == std::byte{0} && i + 1 < size && delta(i + 1) == std::byte{0})) ++i;
    w.varint(literal_from - zeros_from);
    w.varint(i - literal_from);
    for (std::size_t k = literal_from; k < i; ++k) w.u8(std::to_integer<std::uint8_t>(delta(k)));
  }
}

Result<std::vector<std::byte>> decode_keyframe_delta(std::span<const std::byte> code, std::span<const std::byte> first) {
  const std::size_t size = first.size();
  const Planes planes(size);
  std::vector<std::byte> snapshot(first.begin(), first.end());  // XOR with zero: the first's bytes
  ByteReader in(code);
  std::size_t i = 0;
  while (i < size) {
    const std::uint64_t zeros = in.varint(size - i);
    const std::uint64_t literal = in.varint(size - i - static_cast<std::size_t>(zeros));
    if (!in.ok()) return fail("a keyframe's difference runs past its snapshot's size");
    if (zeros + literal == 0) return fail("a keyframe's difference has an empty run");
    i += static_cast<std::size_t>(zeros);
    std::span<const std::byte> bytes = in.bytes(static_cast<std::size_t>(literal));
    if (!in.ok()) return fail("a keyframe's difference is cut short");
    for (std::byte b : bytes) {
      snapshot[planes.at(i)] ^= b;
      ++i;
    }
  }
  if (!in.at_end()) return fail("a keyframe's difference has bytes past its snapshot's end");
  return snapshot;
}

}  // namespace lockstep::replay
