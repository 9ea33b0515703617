#pragma once
/// Files that hold a secret — a token key, a connect token, a reconnect key, a host's local
/// invites, an invite code — written and read one way, as ssh treats a private key:
///
/// - written to a temporary file of an unpredictable name in the same folder, created exclusively
///   without following a link (`O_CREAT|O_EXCL|O_NOFOLLOW`), owner-only (0600 whatever the
///   umask) before its first byte, filled, synced, then renamed into place and the folder synced.
///   A link planted at the temporary or the final name is never followed: its target is left as
///   it was. On failure the temporary is removed and the final name is as it was.
/// - read only from a regular file (a link at the name itself is refused, never followed) owned by
///   this user, of bounded size, on which group and others have no permission at all.
///
/// Errors are one line that names the file. The bytes read are the caller's to wipe (wipe_secret)
/// once used; nothing here keeps a copy.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/result.hpp"

namespace lockstep::net {

/// What writing does when the final name is taken (by a file, a folder or a link).
enum class ExistingFile {
  replace,  ///< replaced (a link itself, never its target)
  refuse,   ///< left alone and an error ("'F' exists: a token key is never written over another file")
};

/// Writes `bytes` to `path` whole or not at all, as the header says. `what` names the content
/// for messages ("token key": "cannot write the token key to 'F': …").
Status write_secret_file(const std::string& path, std::span<const std::byte> bytes, std::string_view what,
                         ExistingFile existing);

/// The whole of `path` when it is a regular file of this user's, not a link, of at most
/// `max_bytes`, closed to group and others; otherwise one line such as "'F' is readable by
/// others (mode 0644); chmod 600 it" or "'F' is a symbolic link: a secret is read from its own
/// file, never through a link".
Result<std::vector<std::byte>> read_secret_file(const std::string& path, std::uint64_t max_bytes);

/// Overwrites `bytes` with zeros in a way no optimiser removes (sodium_memzero): for every buffer
/// that held a secret, before it is freed.
void wipe_secret(std::span<std::byte> bytes);

}  // namespace lockstep::net
