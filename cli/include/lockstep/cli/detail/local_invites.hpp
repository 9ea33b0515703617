#pragma once
/// Invite codes a host leaves for joiners of the same user on the same machine, so that
/// `lockstep join 127.0.0.1:PORT` finds its code as an X11 client finds its cookie in
/// `~/.Xauthority`: the credential is still proven in the handshake, only the typing is saved,
/// and only a process that could read the host's memory anyway can read it.
///
/// The folder is `$LOCKSTEP_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/lockstep`, else
/// `/tmp/lockstep-<uid>`. It is used only when it is a folder itself (not a link), owned by this
/// user and closed to everyone else; a host creates it (0700) when it is missing. The host of UDP
/// port P writes `host-P.invites` as every secret file is written (net/secret_file.hpp: owner-only,
/// through a rename, never through a link):
///
///     lockstep local invites 1
///     pid <the host's process id>
///     invite <CODE>
///     spectate-invite <CODE>
///
/// and removes it when it ends. A joiner reads it only for a loopback address, only when it was
/// given no credential, and ignores a file that secret_file.hpp would not read (a link, someone
/// else's, open to others), is malformed, or whose host process is gone.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::cli::detail {

/// The folder's path, by the environment (not checked or created).
std::string local_invite_folder();

/// The file a host on `port` leaves in `folder`.
std::string local_invite_file(const std::string& folder, std::uint16_t port);

/// The invites one host has left: the file is removed when this dies.
class LocalInvites {
 public:
  /// Writes `lines` (`invite CODE` and `spectate-invite CODE`) for the host on `port`, creating
  /// the folder when it is missing; fails when the folder is not private or cannot be written.
  static Result<LocalInvites> leave(std::uint16_t port, const std::vector<std::string>& lines);

  LocalInvites(LocalInvites&& other) noexcept;
  LocalInvites& operator=(LocalInvites&& other) noexcept;
  LocalInvites(const LocalInvites&) = delete;
  LocalInvites& operator=(const LocalInvites&) = delete;
  ~LocalInvites();

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  explicit LocalInvites(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

/// A code a running host left for `role` on `port`, and the file it came from.
struct LocalInvite {
  std::string code;
  std::string file;
};

/// The code left for `role` by the host on `port`: nothing when the folder or the file is
/// missing, not private, malformed, or its host is gone.
std::optional<LocalInvite> find_local_invite(std::uint16_t port, net::Role role);

}  // namespace lockstep::cli::detail
