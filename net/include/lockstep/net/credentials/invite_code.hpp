#pragma once
/// Invite codes: how a host lets in the people it tells, with no backend. A code is the role it
/// grants, the host's public key and a fresh secret, as one line of text to paste:
/// `LK6-` then base64url (no padding) of kind (1 player, 2 spectator), the host's key (32 bytes),
/// the secret (32) and a 16-bit checksum (the low bits of XXH3-64 over the rest) that catches a
/// mistyped code before anything is sent. A joiner holding one accepts only that host's key in
/// the challenge and mixes the secret into the connection's keys; the host gives the role of the
/// secret that opened the connect, whatever a joiner claims.

#include <string>
#include <string_view>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

inline constexpr std::string_view k_invite_prefix = "LK6-";

struct Invite {
  Role role = Role::player;
  PublicKey host_key{};
  CredentialSecret secret{};
};

/// The code's text.
[[nodiscard]] std::string invite_code(const Invite& invite);
/// The invite a code names, or why it is not one (one line, for `error:`). Spaces and line breaks
/// around it are ignored.
[[nodiscard]] Result<Invite> parse_invite_code(std::string_view code);

}  // namespace lockstep::net
