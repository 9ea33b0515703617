#pragma once
/// A player's reconnect key on disk (`lockstep join --key FILE`): written after the welcome, and
/// again when the player moves to a successor (which gives it a new key); read by a process
/// started later to reclaim the slot. Six text lines: the key, then the host's public key (the
/// only one a reclaim's challenge may name: every successor holds the same) and where the host
/// was when the file was written:
///
///     lockstep reconnect key 2
///     session 0123456789abcdef
///     slot 2
///     key 0123456789abcdef
///     host-key 0123…(64 hex digits)
///     host 10.0.0.1:7777
///
/// A file of version 1 (the first four lines alone) is read too. A key is good for its session and
/// slot only; it is a secret like a password, written and read as secret_file.hpp says
/// (owner-only, never through a link).

#include <optional>
#include <string>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

struct ReconnectKey {
  Reclaim reclaim;
  std::optional<PublicKey> host_key;  ///< the host's (none in version 1)
  std::optional<Endpoint> host;       ///< where it was (none in version 1)
  friend bool operator==(const ReconnectKey&, const ReconnectKey&) = default;
};

/// Reads a key file: an owner-only regular file of at most 1 KB, not a link, every line checked.
Result<ReconnectKey> read_reconnect_key(const std::string& path);
/// Writes it whole or not at all, replacing what is at `path` (a link itself, never its target).
Status write_reconnect_key(const std::string& path, const ReconnectKey& key);

}  // namespace lockstep::net
