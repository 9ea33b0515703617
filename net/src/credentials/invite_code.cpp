#include "lockstep/net/credentials/invite_code.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <vector>

#include "lockstep/engine/state_hash.hpp"

namespace lockstep::net {
namespace {

constexpr std::size_t k_body_bytes = 1 + k_key_exchange_bytes + k_credential_secret_bytes;
constexpr std::size_t k_code_bytes = k_body_bytes + 2;
constexpr int k_variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;

std::uint16_t checksum(std::span<const std::byte> body) { return static_cast<std::uint16_t>(xxh3_64(body)); }

}  // namespace

std::string invite_code(const Invite& invite) {
  std::array<std::byte, k_code_bytes> raw{};
  raw[0] = static_cast<std::byte>(invite.role == Role::player ? 1 : 2);
  std::copy(invite.host_key.begin(), invite.host_key.end(), raw.begin() + 1);
  std::copy(invite.secret.begin(), invite.secret.end(), raw.begin() + 1 + k_key_exchange_bytes);
  const std::uint16_t sum = checksum(std::span(raw).first(k_body_bytes));
  raw[k_body_bytes] = static_cast<std::byte>(sum & 0xFF);
  raw[k_body_bytes + 1] = static_cast<std::byte>(sum >> 8);
  std::string text(sodium_base64_ENCODED_LEN(k_code_bytes, k_variant), '\0');
  sodium_bin2base64(text.data(), text.size(), reinterpret_cast<const unsigned char*>(raw.data()), raw.size(), k_variant);
  sodium_memzero(raw.data(), raw.size());
  text.resize(text.size() - 1);  // the terminating NUL
  return std::string(k_invite_prefix) + text;
}

Result<Invite> parse_invite_code(std::string_view code) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!code.empty() && blank(code.front())) code.remove_prefix(1);
  while (!code.empty() && blank(code.back())) code.remove_suffix(1);
  if (code.substr(0, k_invite_prefix.size()) != k_invite_prefix) {
    return fail("'", code.substr(0, 12), code.size() > 12 ? "…" : "", "' is not a lockstep invite code (they start with ",
                k_invite_prefix, ")");
  }
  code.remove_prefix(k_invite_prefix.size());
  std::array<std::byte, k_code_bytes> raw{};
  std::size_t length = 0;
  const char* end = nullptr;
  const bool decoded = sodium_base642bin(reinterpret_cast<unsigned char*>(raw.data()), raw.size(), code.data(), code.size(),
                                         nullptr, &length, &end, k_variant) == 0;
  const std::uint16_t want = static_cast<std::uint16_t>(std::to_integer<std::uint16_t>(raw[k_body_bytes]) |
                                                        std::to_integer<std::uint16_t>(raw[k_body_bytes + 1]) << 8);
  const bool whole = decoded && length == k_code_bytes && end == code.data() + code.size();
  if (!whole || checksum(std::span(raw).first(k_body_bytes)) != want) {
    sodium_memzero(raw.data(), raw.size());
    return fail("the invite code is damaged or incomplete (copy the whole line the host printed)");
  }
  Invite invite;
  const auto kind = std::to_integer<std::uint8_t>(raw[0]);
  if (kind != 1 && kind != 2) {
    sodium_memzero(raw.data(), raw.size());
    return fail("the invite code is of a kind this program does not know (", int{kind}, ")");
  }
  invite.role = kind == 1 ? Role::player : Role::spectator;
  std::copy(raw.begin() + 1, raw.begin() + 1 + k_key_exchange_bytes, invite.host_key.begin());
  std::copy(raw.begin() + 1 + k_key_exchange_bytes, raw.begin() + k_body_bytes, invite.secret.begin());
  sodium_memzero(raw.data(), raw.size());
  return invite;
}

}  // namespace lockstep::net
