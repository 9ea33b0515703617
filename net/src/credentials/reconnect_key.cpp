#include "lockstep/net/credentials/reconnect_key.hpp"

#include <sodium.h>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <vector>
#include <optional>
#include <span>
#include <string_view>

#include "lockstep/net/credentials/secret_file.hpp"
#include "lockstep/net/io/host_port.hpp"

namespace lockstep::net {
namespace {

constexpr std::string_view k_first_line = "lockstep reconnect key 2";
constexpr std::string_view k_first_line_v1 = "lockstep reconnect key 1";

/// Lowercase hex digits (at most 16) into `out`.
bool hex_digits(std::string_view digits, std::uint64_t& out) {
  out = 0;
  for (const char c : digits) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    out = (out << 4) | static_cast<std::uint64_t>(digit);
  }
  return true;
}

/// "name <value>" with exactly that name, the value 16 lowercase hex digits.
bool hex_line(std::string_view line, std::string_view name, std::uint64_t& out) {
  if (line.size() != name.size() + 17 || line.substr(0, name.size()) != name || line[name.size()] != ' ') return false;
  return hex_digits(line.substr(name.size() + 1), out);
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

/// Views of the whole lines (a file cut short loses its last newline), four or six: no copy of
/// the key is made that would need wiping.
std::optional<std::vector<std::string_view>> whole_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos || lines.size() == 6) return std::nullopt;
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end + 1);
  }
  if (lines.size() != 4 && lines.size() != 6) return std::nullopt;
  return lines;
}

/// "host-key <64 lowercase hex digits>".
std::optional<PublicKey> host_key_line(std::string_view line) {
  constexpr std::string_view name = "host-key ";
  if (line.size() != name.size() + 64 || line.substr(0, name.size()) != name) return std::nullopt;
  PublicKey key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    std::uint64_t byte = 0;
    if (!hex_digits(line.substr(name.size() + 2 * i, 2), byte)) return std::nullopt;
    key[i] = static_cast<std::byte>(byte);
  }
  return key;
}

/// "host <address:port>" (an IPv6 address in brackets), as endpoint_text writes it: an address,
/// never a name to look up.
std::optional<Endpoint> host_line(std::string_view line) {
  if (line.substr(0, 5) != "host ") return std::nullopt;
  const std::string_view text = line.substr(5);
  std::string_view address = text.substr(0, std::min(text.rfind(':'), text.size()));
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
  boost::system::error_code error;
  (void)boost::asio::ip::make_address(std::string(address), error);
  if (error) return std::nullopt;
  Result<Endpoint> host = parse_host_port(text);
  if (!host) return std::nullopt;
  return host.value();
}

/// Appends 16 lowercase hex digits in place (hash_hex's string would be a copy left unwiped).
void append_hex(std::string& out, std::uint64_t value) {
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back("0123456789abcdef"[(value >> shift) & 0xF]);
}

Result<ReconnectKey> parse(std::string_view text, const std::string& path) {
  const std::optional<std::vector<std::string_view>> lines = whole_lines(text);
  ReconnectKey k;
  Reclaim& r = k.reclaim;
  // Version 1 is the first four lines alone; version 2 has all six.
  bool good = lines && (*lines)[0] == (lines->size() == 4 ? k_first_line_v1 : k_first_line) &&
              hex_line((*lines)[1], "session", r.session) && slot_line((*lines)[2], r.slot) &&
              hex_line((*lines)[3], "key", r.key) && r.key != 0;
  if (good && lines->size() == 6) {
    k.host_key = host_key_line((*lines)[4]);
    k.host = host_line((*lines)[5]);
    good = k.host_key && k.host;
  }
  if (!good) {
    sodium_memzero(&r.key, sizeof r.key);  // whatever of it was decoded before the refusal
    return fail("'", path, "' is not a lockstep reconnect key");
  }
  return k;
}

}  // namespace

Result<ReconnectKey> read_reconnect_key(const std::string& path) {
  Result<std::vector<std::byte>> bytes = read_secret_file(path, 1024);
  if (!bytes) return bytes.error();
  Result<ReconnectKey> key = parse(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
  sodium_memzero(bytes->data(), bytes->size());
  return key;
}

Status write_reconnect_key(const std::string& path, const ReconnectKey& k) {
  const Reclaim& r = k.reclaim;
  if (k.host_key.has_value() != k.host.has_value()) return fail("a reconnect key names its host's key and address together");
  std::string text;
  text.reserve(512);  // the whole key without a reallocation, so that one wipe covers every copy
  text.append(k.host ? k_first_line : k_first_line_v1).append("\nsession ");  // version 1: the key alone
  append_hex(text, r.session);
  text.append("\nslot ").append(std::to_string(r.slot)).append("\nkey ");
  append_hex(text, r.key);
  text.append("\n");
  if (k.host_key && k.host) {
    text.append("host-key ");
    for (const std::byte b : *k.host_key) {
      text.push_back("0123456789abcdef"[std::to_integer<unsigned>(b) >> 4]);
      text.push_back("0123456789abcdef"[std::to_integer<unsigned>(b) & 0xF]);
    }
    text.append("\nhost ").append(endpoint_text(*k.host)).append("\n");
  }
  Status written = write_secret_file(path, std::as_bytes(std::span(text)), "reconnect key", ExistingFile::replace);
  sodium_memzero(text.data(), text.size());
  return written;
}

}  // namespace lockstep::net
