#pragma once
/// Credentials on disk: the token key of `lockstep keygen` and the connect tokens of `lockstep
/// token`. Text files, written and read as secret_file.hpp says (owner-only from the first byte,
/// never through a link) and never overwritten (a key or token replaced by accident is a session
/// nobody can join, or a door left open):
///
///     lockstep token key 1              lockstep connect token 2
///     key <64 hex digits>               token <base64url of the 100-byte blob, no padding>
///                                       secret <64 hex digits: the client secret>
///                                       role player|spectator
///                                       slot <0-255>|any
///                                       expires <Unix seconds>
///                                       host <host id, decimal>
///                                       client <client id, 16 hex digits>
///
/// A joiner needs the token and secret lines; the rest says what the blob grants (the host reads
/// the grant from the blob, never from these lines).

#include <string>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/credentials/connect_token.hpp"

namespace lockstep::net {

/// Writes a new key file; fails when anything is at `path` (a dangling link too).
Status write_token_key(const std::string& path, const TokenKey& key);
/// Reads a key file: an owner-only regular file of at most 1 KB, not a link, every line checked.
Result<TokenKey> read_token_key(const std::string& path);
/// Writes a new token file; fails when anything is at `path` (a dangling link too).
Status write_connect_token(const std::string& path, const ConnectToken& token);
/// Reads a token file: as a key file, every line checked.
Result<ConnectToken> read_connect_token(const std::string& path);

}  // namespace lockstep::net
