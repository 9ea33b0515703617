#include "lockstep/net/credential_files.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::net {
namespace {

constexpr const char* k_key_first_line = "lockstep token key 1";
constexpr const char* k_token_first_line = "lockstep connect token 1";
constexpr int k_base64 = sodium_base64_VARIANT_URLSAFE_NO_PADDING;

std::string hex_of(std::span<const std::byte> bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  out.pop_back();
  return out;
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

/// The file's lines, when it is a regular file of at most 1 KB ending in a newline.
Result<std::vector<std::string>> lines_of(const std::string& path) {
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, 1024);
  if (!bytes) return bytes.error();
  const std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (text.empty() || text.back() != '\n') lines.clear();
  sodium_memzero(bytes->data(), bytes->size());
  return lines;
}

/// Creates `path` (not there before), readable by its owner alone, with `text`.
Status write_new(const std::string& path, const std::string& text, const char* what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return fail("'", path, "' exists: a ", what, " is never written over another file");
    return fail("cannot create '", path, "': ", std::strerror(errno));
  }
  const char* at = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return fail("cannot write '", path, "': ", std::strerror(error));
    }
    at += n;
    left -= static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int sync_error = errno;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    const int error = synced ? errno : sync_error;
    ::unlink(path.c_str());
    return fail("cannot write '", path, "': ", std::strerror(error));
  }
  return {};
}

}  // namespace

Status write_token_key(const std::string& path, const TokenKey& key) {
  std::string text = std::string(k_key_first_line) + "\nkey " + hex_of(key) + "\n";
  Status written = write_new(path, text, "token key");
  sodium_memzero(text.data(), text.size());
  return written;
}

Result<TokenKey> read_token_key(const std::string& path) {
  Result<std::vector<std::string>> lines = lines_of(path);
  if (!lines) return lines.error();
  TokenKey key{};
  const bool ok = lines->size() == 2 && (*lines)[0] == k_key_first_line && hex_line((*lines)[1], "key", key);
  for (std::string& line : *lines) sodium_memzero(line.data(), line.size());
  if (!ok) return fail("'", path, "' is not a lockstep token key");
  return key;
}

Status write_connect_token(const std::string& path, const ConnectToken& token) {
  std::string blob(sodium_base64_ENCODED_LEN(k_token_blob_bytes, k_base64), '\0');
  sodium_bin2base64(blob.data(), blob.size(), reinterpret_cast<const unsigned char*>(token.blob.data()), token.blob.size(),
                    k_base64);
  blob.pop_back();
  const TokenGrant& g = token.grant;
  std::string text = std::string(k_token_first_line) + "\ntoken " + blob + "\nsecret " + hex_of(token.secret) + "\nrole " +
                     (g.role == Role::player ? "player" : "spectator") + "\nslot " +
                     (g.slot == k_no_slot ? std::string("any") : std::to_string(g.slot)) + "\nexpires " +
                     std::to_string(g.expires) + "\nhost " + std::to_string(g.host_id) + "\nclient " + hash_hex(g.client_id) +
                     "\n";
  Status written = write_new(path, text, "connect token");
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
    token.grant.slot = l[4] == "slot any" ? k_no_slot : static_cast<std::uint8_t>(slot);
    token.grant.client_id = client;
  }
  for (std::string& line : *lines) sodium_memzero(line.data(), line.size());
  if (!ok) return fail("'", path, "' is not a lockstep connect token");
  return token;
}

}  // namespace lockstep::net
