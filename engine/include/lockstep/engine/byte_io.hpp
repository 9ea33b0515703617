#pragma once
/// Explicit little-endian field writing and bounded reading for file and wire formats
/// (fixed-width fields and LEB128 varints, every length bounded before anything is allocated,
/// no casting a buffer to a struct).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// Appends little-endian fields to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<std::byte>& out) : out_(&out) {}

  void u8(std::uint8_t v) { out_->push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  /// LEB128: seven bits a byte, low first, the top bit set on every byte but the last (1 byte
  /// below 128, at most 10).
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      u8(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    u8(static_cast<std::uint8_t>(v));
  }
  void bytes(std::span<const std::byte> data) { out_->insert(out_->end(), data.begin(), data.end()); }
  /// A u32 length, then the bytes.
  void blob(std::span<const std::byte> data) {
    u32(static_cast<std::uint32_t>(data.size()));
    bytes(data);
  }
  /// A u16 length, then UTF-8 bytes (longer strings are cut at 65,535 bytes).
  void text(std::string_view s) {
    const std::size_t n = s.size() < 0xFFFF ? s.size() : 0xFFFF;
    u16(static_cast<std::uint16_t>(n));
    for (std::size_t i = 0; i < n; ++i) out_->push_back(static_cast<std::byte>(s[i]));
  }
  [[nodiscard]] std::size_t size() const { return out_->size(); }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_->push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFFu));
  }
  std::vector<std::byte>* out_;
};

/// Reads little-endian fields from untrusted bytes. Reading past the end, or a length over its
/// bound, makes the reader fail: every later read returns zero or empty and `ok()` is false, so
/// a parser reads its fields and checks once.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> in) : in_(in) {}

  std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(get(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() { return get(8); }
  /// A LEB128 varint (see ByteWriter::varint) of at most `max`. Fails on a value over `max`,
  /// on more than 10 bytes, and on an overlong encoding (a last byte of 0 after the first), so
  /// that every value has exactly one encoding.
  std::uint64_t varint(std::uint64_t max = ~std::uint64_t{0}) {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      const std::uint64_t byte = get(1);
      if (!ok_) return 0;
      if (shift == 63 && byte > 1) break;  // past 64 bits
      v |= (byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) {
        if ((byte == 0 && shift > 0) || v > max) break;
        return v;
      }
    }
    ok_ = false;
    return 0;
  }

  /// `n` raw bytes (a view into the input).
  std::span<const std::byte> bytes(std::size_t n) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return {};
    }
    std::span<const std::byte> out = in_.subspan(offset_, n);
    offset_ += n;
    return out;
  }
  /// A u32 length (at most `max_bytes`), then the bytes.
  std::span<const std::byte> blob(std::size_t max_bytes) {
    const std::uint32_t n = u32();
    if (n > max_bytes) {
      ok_ = false;
      return {};
    }
    return bytes(n);
  }
  /// A u16 length (at most `max_bytes`), then the text.
  std::string text(std::size_t max_bytes) {
    const std::uint16_t n = u16();
    if (n > max_bytes) {
      ok_ = false;
      return {};
    }
    std::span<const std::byte> raw = bytes(n);
    return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
  }

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] std::size_t remaining() const { return in_.size() - offset_; }
  [[nodiscard]] std::size_t offset() const { return offset_; }
  [[nodiscard]] bool at_end() const { return ok_ && offset_ == in_.size(); }

 private:
  std::uint64_t get(std::size_t n) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::to_integer<std::uint64_t>(in_[offset_ + i]) << (8 * i);
    offset_ += n;
    return v;
  }
  std::span<const std::byte> in_;
  std::size_t offset_ = 0;
  bool ok_ = true;
};

}  // namespace lockstep
