#pragma once
// Walking and editing the chunks of a replay file's bytes, for tests and the fuzz target that
// change a file on purpose: where each chunk's header, payload and checksum lie, re-encoding a
// header with other values, and resealing a chunk so that only the intended edit is wrong.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/replay/format.hpp"

namespace lockstep::testing {

struct ChunkSpan {
  std::size_t begin = 0;    ///< the type byte
  std::size_t payload = 0;  ///< the first payload byte (the header check ends here)
  std::size_t end = 0;      ///< one past the checksum
  std::uint8_t type = 0;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  [[nodiscard]] std::size_t payload_end() const { return end - replay::k_chunk_checksum_bytes; }
};

/// Every chunk whose header reads and whose bytes are all there, in file order.
inline std::vector<ChunkSpan> chunk_spans(std::span<const std::byte> bytes) {
  std::vector<ChunkSpan> spans;
  std::size_t at = replay::k_preamble_bytes;
  while (at < bytes.size()) {
    ByteReader head(bytes.subspan(at));
    ChunkSpan span;
    span.begin = at;
    span.type = head.u8();
    const std::uint64_t length = head.varint();
    span.first = head.varint();
    span.last = span.first + head.varint();
    head.u32();
    if (!head.ok() || length > head.remaining() || head.remaining() - length < replay::k_chunk_checksum_bytes) break;
    span.payload = at + head.offset();
    span.end = span.payload + static_cast<std::size_t>(length) + replay::k_chunk_checksum_bytes;
    spans.push_back(span);
    at = span.end;
  }
  return spans;
}

inline void put_le(std::vector<std::byte>& bytes, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

/// Rewrites a chunk's header check, after an edit to its header, so that only the edit is wrong.
inline void reseal_header(std::vector<std::byte>& bytes, const ChunkSpan& span) {
  const std::size_t checked = span.payload - replay::k_chunk_header_check_bytes - span.begin;
  put_le(bytes, span.begin + checked, xxh3_64(std::span<const std::byte>(bytes).subspan(span.begin, checked)) & 0xFFFFFFFFu, 4);
}

/// Rewrites a chunk's header check and checksum after an edit, so that only the edit is wrong.
inline void reseal(std::vector<std::byte>& bytes, const ChunkSpan& span) {
  reseal_header(bytes, span);
  const std::size_t body = span.payload_end() - span.begin;
  put_le(bytes, span.payload_end(), xxh3_64(std::span<const std::byte>(bytes).subspan(span.begin, body)) & 0xFFFFFFFFu, 4);
}

/// The file with one chunk replaced by one of these values and payload, its check and checksum
/// right; `length` is what the header claims.
inline std::vector<std::byte> with_chunk(const std::vector<std::byte>& bytes, const ChunkSpan& span, std::uint8_t type,
                                         std::uint64_t length, std::uint64_t first, std::uint64_t last,
                                         std::span<const std::byte> payload) {
  std::vector<std::byte> chunk;
  ByteWriter w(chunk);
  w.u8(type);
  w.varint(length);
  w.varint(first);
  w.varint(last - first);
  w.u32(static_cast<std::uint32_t>(xxh3_64(chunk) & 0xFFFFFFFFu));
  w.bytes(payload);
  w.u32(static_cast<std::uint32_t>(xxh3_64(chunk) & 0xFFFFFFFFu));
  std::vector<std::byte> out(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(span.begin));
  out.insert(out.end(), chunk.begin(), chunk.end());
  out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(span.end), bytes.end());
  return out;
}

/// The file with one chunk's header written anew with these values (its payload kept).
inline std::vector<std::byte> with_header(const std::vector<std::byte>& bytes, const ChunkSpan& span, std::uint8_t type,
                                          std::uint64_t length, std::uint64_t first, std::uint64_t last) {
  return with_chunk(bytes, span, type, length, first, last,
                    std::span<const std::byte>(bytes).subspan(span.payload, span.payload_end() - span.payload));
}

}  // namespace lockstep::testing
