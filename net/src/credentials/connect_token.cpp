#include "lockstep/net/credentials/connect_token.hpp"

#include <sodium.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/byte_io.hpp"

namespace lockstep::net {
namespace {

/// Format, role, slot, expiry, host id, client id, client secret.
constexpr std::size_t k_grant_bytes = 1 + 1 + 2 + 8 + 8 + 8 + k_credential_secret_bytes;
static_assert(k_token_blob_bytes == k_once_nonce_bytes + k_grant_bytes + k_packet_tag_bytes);
static_assert(k_token_key_bytes == crypto_aead_xchacha20poly1305_ietf_KEYBYTES);
constexpr std::string_view k_token_ad = "lockstep token 2";

const unsigned char* as_uchar(const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); }
unsigned char* as_uchar(std::byte* p) { return reinterpret_cast<unsigned char*>(p); }

}  // namespace

ConnectToken mint_token(const TokenKey& key, const TokenGrant& grant, const std::array<std::byte, k_token_random_bytes>& random) {
  ConnectToken token;
  token.grant = grant;
  std::copy(random.begin() + k_once_nonce_bytes, random.end(), token.secret.begin());
  std::vector<std::byte> plain;
  plain.reserve(k_grant_bytes);
  ByteWriter w(plain);
  w.u8(k_token_format);
  w.u8(static_cast<std::uint8_t>(grant.role));
  w.u16(grant.slot);
  w.u64(grant.expires);
  w.u64(grant.host_id);
  w.u64(grant.client_id);
  w.bytes(token.secret);
  LOCKSTEP_ASSERT(plain.size() == k_grant_bytes);
  std::copy(random.begin(), random.begin() + k_once_nonce_bytes, token.blob.begin());
  crypto_aead_xchacha20poly1305_ietf_encrypt(as_uchar(token.blob.data() + k_once_nonce_bytes), nullptr, as_uchar(plain.data()),
                                             plain.size(), reinterpret_cast<const unsigned char*>(k_token_ad.data()),
                                             k_token_ad.size(), nullptr, as_uchar(token.blob.data()), as_uchar(key.data()));
  sodium_memzero(plain.data(), plain.size());
  return token;
}

std::optional<OpenedToken> open_token(const TokenKey& key, const TokenBlob& blob) {
  std::array<std::byte, k_grant_bytes> plain{};
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(as_uchar(plain.data()), nullptr, nullptr,
                                                 as_uchar(blob.data() + k_once_nonce_bytes),
                                                 blob.size() - k_once_nonce_bytes,
                                                 reinterpret_cast<const unsigned char*>(k_token_ad.data()), k_token_ad.size(),
                                                 as_uchar(blob.data()), as_uchar(key.data())) != 0) {
    return std::nullopt;
  }
  ByteReader r(plain);
  OpenedToken out;
  const std::uint8_t format = r.u8();
  const std::uint8_t role = r.u8();
  out.grant.slot = r.u16();
  out.grant.expires = r.u64();
  out.grant.host_id = r.u64();
  out.grant.client_id = r.u64();
  const std::span<const std::byte> secret = r.bytes(k_credential_secret_bytes);
  const bool ok = r.ok() && format == k_token_format && role <= static_cast<std::uint8_t>(Role::spectator) &&
                  (out.grant.slot == k_no_slot || (role == 0 && out.grant.slot < k_max_session_players)) &&
                  out.grant.client_id != 0;
  if (ok) {
    out.grant.role = static_cast<Role>(role);
    std::copy(secret.begin(), secret.end(), out.secret.begin());
  }
  sodium_memzero(plain.data(), plain.size());
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace lockstep::net
