#pragma once
/// A player's reconnect key on disk (`lockstep join --key FILE`): written after the welcome, read
/// by a process started later to reclaim the slot. Four text lines:
///
///     lockstep reconnect key 1
///     session 0123456789abcdef
///     slot 2
///     key 0123456789abcdef
///
/// A key is good for its session and slot only; it is a secret like a password, written and read
/// as secret_file.hpp says (owner-only, never through a link).

#include <string>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// Reads a key file: an owner-only regular file of at most 1 KB, not a link, every line checked.
Result<Reclaim> read_reconnect_key(const std::string& path);
/// Writes it whole or not at all, replacing what is at `path` (a link itself, never its target).
Status write_reconnect_key(const std::string& path, const Reclaim& reclaim);

}  // namespace lockstep::net
