#include "lockstep/net/credentials/reconnect_key.hpp"

#include <sodium.h>

#include <array>
#include <optional>
#include <span>
#include <string_view>

#include "lockstep/net/credentials/secret_file.hpp"

namespace lockstep::net {
namespace {

constexpr const char* k_first_line = "lockstep reconnect key 1";

/// "name <value>" with exactly that name, the value 16 lowercase hex digits.
bool hex_line(std::string_view line, std::string_view name, std::uint64_t& out) {
  if (line.size() != name.size() + 17 || line.substr(0, name.size()) != name || line[name.size()] != ' ') return false;
  out = 0;
  for (const char c : line.substr(name.size() + 1)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    out = (out << 4) | static_cast<std::uint64_t>(digit);
  }
  return true;
}

/// "slot <1 to 3 decimal digits>", a slot of a session.
bool slot_line(std::string_view line, Slot& out) {
  if (line.size() < 6 || line.size() > 8 || line.substr(0, 5) != "slot ") return false;
  unsigned value = 0;
  for (const char c : line.substr(5)) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value >= k_max_session_players) return false;
  out = static_cast<Slot>(value);
  return true;
}

/// Views of four whole lines (a file cut short loses its last newline) with nothing after them:
/// no copy of the key is made that would need wiping.
std::optional<std::array<std::string_view, 4>> four_lines(std::string_view text) {
  std::array<std::string_view, 4> lines;
  for (std::string_view& line : lines) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) return std::nullopt;
    line = text.substr(0, end);
    text.remove_prefix(end + 1);
  }
  if (!text.empty()) return std::nullopt;
  return lines;
}

/// Appends 16 lowercase hex digits in place (hash_hex's string would be a copy left unwiped).
void append_hex(std::string& out, std::uint64_t value) {
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back("0123456789abcdef"[(value >> shift) & 0xF]);
}

Result<Reclaim> parse(std::string_view text, const std::string& path) {
  const std::optional<std::array<std::string_view, 4>> lines = four_lines(text);
  Reclaim r;
  if (!lines || (*lines)[0] != k_first_line || !hex_line((*lines)[1], "session", r.session) ||
      !slot_line((*lines)[2], r.slot) || !hex_line((*lines)[3], "key", r.key) || r.key == 0) {
    sodium_memzero(&r.key, sizeof r.key);  // whatever of it was decoded before the refusal
    return fail("'", path, "' is not a lockstep reconnect key");
  }
  return r;
}

}  // namespace

Result<Reclaim> read_reconnect_key(const std::string& path) {
  Result<std::vector<std::byte>> bytes = read_secret_file(path, 1024);
  if (!bytes) return bytes.error();
  Result<Reclaim> key = parse(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
  sodium_memzero(bytes->data(), bytes->size());
  return key;
}

Status write_reconnect_key(const std::string& path, const Reclaim& r) {
  std::string text;
  text.reserve(128);  // the whole key without a reallocation, so that one wipe covers every copy
  text.append(k_first_line).append("\nsession ");
  append_hex(text, r.session);
  text.append("\nslot ").append(std::to_string(r.slot)).append("\nkey ");
  append_hex(text, r.key);
  text.append("\n");
  Status written = write_secret_file(path, std::as_bytes(std::span(text)), "reconnect key", ExistingFile::replace);
  sodium_memzero(text.data(), text.size());
  return written;
}

}  // namespace lockstep::net
