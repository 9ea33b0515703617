#pragma once
/// Connect tokens: what a matchmaking backend gives a player or spectator so that one host lets it
/// in. A backend and its hosts share a token key; a token is a grant (role, slot, expiry, host id,
/// client id) and a fresh client secret, sealed under that key with XChaCha20-Poly1305 and a random
/// nonce. The joiner holds the sealed blob and the client secret; the host opens the blob, checks
/// the grant, and the handshake proves the joiner holds the same secret. net/PROTOCOL.md,
/// "Connect tokens", gives every byte, for backends in other languages.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

inline constexpr std::size_t k_token_key_bytes = 32;
using TokenKey = std::array<std::byte, k_token_key_bytes>;
/// The version of the token layout, its first sealed byte.
inline constexpr std::uint8_t k_token_format = 2;
/// What the random source gives a token: the nonce, then the client secret.
inline constexpr std::size_t k_token_random_bytes = k_once_nonce_bytes + k_credential_secret_bytes;

/// The longest a token may live: a year (and a day). `lockstep token` mints none longer, and a
/// host refuses one whose expiry is further than this from its clock (tokens carry no creation
/// time, so this bounds what is left of a token's life, not its age).
inline constexpr std::uint64_t k_max_token_lifetime_s = 366ull * 24 * 3600;

/// What a token lets its holder do.
struct TokenGrant {
  Role role = Role::player;
  Slot slot = k_no_slot;  ///< a player's fixed slot, or k_no_slot for any free one
  std::uint64_t expires = 0;      ///< Unix seconds: not admitted at or after it
  std::uint64_t host_id = 0;      ///< only the host started with this id admits it
  std::uint64_t client_id = 0;    ///< one live connection per client id; never 0 (no token opens with 0)
  friend bool operator==(const TokenGrant&, const TokenGrant&) = default;
};

struct ConnectToken {
  TokenBlob blob{};             ///< travels in the connect, opaque to the joiner
  CredentialSecret secret{};    ///< the joiner's alone: never sent
  TokenGrant grant;
};

/// Mints a token under `key`. `random` is k_token_random_bytes from a cryptographic source: the
/// blob's nonce and the client secret. A grant open_token refuses (client id 0, a spectator's
/// slot, a slot past 7) is sealed as given, and no host admits it.
ConnectToken mint_token(const TokenKey& key, const TokenGrant& grant,
                        const std::array<std::byte, k_token_random_bytes>& random);

struct OpenedToken {
  TokenGrant grant;
  CredentialSecret secret{};
};
/// The grant and secret of a blob sealed under `key` in format k_token_format with a role and slot
/// in bounds; nothing for anything else (another key, damage, another format). Expiry and host id
/// are the host's to check.
[[nodiscard]] std::optional<OpenedToken> open_token(const TokenKey& key, const TokenBlob& blob);

}  // namespace lockstep::net
