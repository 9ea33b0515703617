#include "lockstep/net/credentials/credential_files.hpp"

#include <sodium.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/net/credentials/secret_file.hpp"

namespace lockstep::net {
namespace {

constexpr const char* k_key_first_line = "lockstep token key 1";
constexpr const char* k_token_first_line = "lockstep connect token 2";
constexpr int k_base64 = sodium_base64_VARIANT_URLSAFE_NO_PADDING;

/// Room for a whole credential file: text built in it never reallocates, so that one wipe at the
/// end covers every copy of the secret it holds.
constexpr std::size_t k_text_capacity = 1024;

/// Appends `bytes` as lowercase hex in place (a returned string would be a copy left unwiped).
void append_hex(std::string& out, std::span<const std::byte> bytes) {
  const std::size_t at = out.size();
  out.resize(at + 2 * bytes.size() + 1);
  sodium_bin2hex(out.data() + at, 2 * bytes.size() + 1, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  out.pop_back();  // sodium's terminating NUL
}

/// Appends `bytes` as base64url without padding, in place.
void append_base64(std::string& out, std::span<const std::byte> bytes) {
  const std::size_t at = out.size();
  const std::size_t room = sodium_base64_ENCODED_LEN(bytes.size(), k_base64);
  out.resize(at + room);
  sodium_bin2base64(out.data() + at, room, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), k_base64);
  out.resize(at + room - 1);  // sodium's terminating NUL
}

/// `name <exactly N bytes as lowercase hex>`.
template <std::size_t N>
bool hex_line(const std::string& line, const std::string& name, std::array<std::byte, N>& out) {
  if (line.size() != name.size() + 1 + 2 * N || line.compare(0, name.size() + 1, name + " ") != 0) return false;
  for (std::size_t i = name.size() + 1; i < line.size(); ++i) {
    const char c = line[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  std::size_t length = 0;
  return sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), N, line.data() + name.size() + 1, 2 * N, nullptr,
                        &length, nullptr) == 0 &&
         length == N;
}

/// `name <decimal>`, at most 20 digits, no sign, no leading zero but a lone 0.
bool number_line(const std::string& line, const std::string& name, std::uint64_t& out) {
  if (line.compare(0, name.size() + 1, name + " ") != 0) return false;
  const std::string digits = line.substr(name.size() + 1);
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits[0] == '0')) return false;
  out = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (out > (UINT64_MAX - d) / 10) return false;
    out = out * 10 + d;
  }
  return true;
}

/// The file's lines, when it is a secret file (secret_file.hpp) of at most 1 KB ending in a newline;
/// the caller wipes them. The bytes read are wiped here.
Result<std::vector<std::string>> lines_of(const std::string& path) {
  Result<std::vector<std::byte>> bytes = read_secret_file(path, 1024);
  if (!bytes) return bytes.error();
  std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  std::vector<std::string> lines;
  lines.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));  // no line moved, none left unwiped
  if (!text.empty() && text.back() == '\n') {
    for (std::size_t end = text.find('\n'); end != std::string_view::npos; end = text.find('\n')) {
      lines.emplace_back(text.substr(0, end));
      text.remove_prefix(end + 1);
    }
  }
  sodium_memzero(bytes->data(), bytes->size());
  return lines;
}

}  // namespace

Status write_token_key(const std::string& path, const TokenKey& key) {
  std::string text;
  text.reserve(k_text_capacity);
  text.append(k_key_first_line).append("\nkey ");
  append_hex(text, key);
  text.append("\n");
  Status written = write_secret_file(path, std::as_bytes(std::span(text)), "token key", ExistingFile::refuse);
  sodium_memzero(text.data(), text.size());
  return written;
}

Result<TokenKey> read_token_key(const std::string& path) {
  Result<std::vector<std::string>> lines = lines_of(path);
  if (!lines) return lines.error();
  TokenKey key{};
  const bool ok = lines->size() == 2 && (*lines)[0] == k_key_first_line && hex_line((*lines)[1], "key", key);
  for (std::string& line : *lines) sodium_memzero(line.data(), line.size());
  if (!ok) {
    sodium_memzero(key.data(), key.size());  // whatever of it was decoded before the refusal
    return fail("'", path, "' is not a lockstep token key");
  }
  return key;
}

Status write_connect_token(const std::string& path, const ConnectToken& token) {
  const TokenGrant& g = token.grant;
  std::string text;
  text.reserve(k_text_capacity);
  text.append(k_token_first_line).append("\ntoken ");
  append_base64(text, token.blob);
  text.append("\nsecret ");
  append_hex(text, token.secret);
  text.append("\nrole ").append(g.role == Role::player ? "player" : "spectator");
  text.append("\nslot ").append(g.slot == k_no_slot ? std::string("any") : std::to_string(g.slot));
  text.append("\nexpires ").append(std::to_string(g.expires)).append("\nhost ").append(std::to_string(g.host_id));
  text.append("\nclient ").append(hash_hex(g.client_id)).append("\n");
  Status written = write_secret_file(path, std::as_bytes(std::span(text)), "connect token", ExistingFile::refuse);
  sodium_memzero(text.data(), text.size());
  return written;
}

Result<ConnectToken> read_connect_token(const std::string& path) {
  Result<std::vector<std::string>> lines = lines_of(path);
  if (!lines) return lines.error();
  const std::vector<std::string>& l = *lines;
  ConnectToken token;
  bool ok = l.size() == 8 && l[0] == k_token_first_line && l[1].rfind("token ", 0) == 0;
  if (ok) {
    std::size_t length = 0;
    const char* end = nullptr;
    const std::string_view text = std::string_view(l[1]).substr(6);
    ok = sodium_base642bin(reinterpret_cast<unsigned char*>(token.blob.data()), token.blob.size(), text.data(), text.size(),
                           nullptr, &length, &end, k_base64) == 0 &&
         length == k_token_blob_bytes && end == text.data() + text.size();
  }
  ok = ok && hex_line(l[2], "secret", token.secret);
  ok = ok && (l[3] == "role player" || l[3] == "role spectator");
  std::uint64_t slot = 0, client = 0;
  ok = ok && (l[4] == "slot any" || (number_line(l[4], "slot", slot) && slot < k_max_session_players));
  ok = ok && number_line(l[5], "expires", token.grant.expires) && number_line(l[6], "host", token.grant.host_id);
  std::array<std::byte, 8> client_bytes{};
  ok = ok && hex_line(l[7], "client", client_bytes);
  for (std::byte b : client_bytes) client = (client << 8) | std::to_integer<std::uint64_t>(b);
  if (ok) {
    token.grant.role = l[3] == "role player" ? Role::player : Role::spectator;
    token.grant.slot = l[4] == "slot any" ? k_no_slot : static_cast<Slot>(slot);
    token.grant.client_id = client;
  }
  for (std::string& line : *lines) sodium_memzero(line.data(), line.size());
  if (!ok) {
    sodium_memzero(token.secret.data(), token.secret.size());  // whatever of it was decoded
    return fail("'", path, "' is not a lockstep connect token");
  }
  return token;
}

}  // namespace lockstep::net
