#include "lockstep/cli/detail/local_invites.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli::detail {
namespace {

constexpr const char* k_first_line = "lockstep local invites 1";
constexpr std::uint64_t k_max_file_bytes = 4096;

/// True when `st` is owned by this user and closed to group and others.
bool private_to_us(const struct stat& st) { return st.st_uid == ::geteuid() && (st.st_mode & 077) == 0; }

/// Checks that `folder` is a private folder of ours, creating it first when `create` and missing.
Status check_folder(const std::string& folder, bool create) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) {
    if (errno != ENOENT || !create) return fail("cannot use '", folder, "': ", std::strerror(errno));
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
      return fail("cannot create '", folder, "': ", std::strerror(errno));
    }
    if (::lstat(folder.c_str(), &st) != 0) return fail("cannot use '", folder, "': ", std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return fail("'", folder, "' is not a folder");
  if (!private_to_us(st)) return fail("'", folder, "' is not private to this user (owner-only, mode 0700)");
  return {};
}

/// True when process `pid` runs (or runs as someone else).
bool alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

std::string local_invite_folder() {
  if (const char* chosen = std::getenv("LOCKSTEP_RUNTIME_DIR"); chosen != nullptr && *chosen != '\0') return chosen;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/') {
    return std::string(runtime) + "/lockstep";
  }
  return "/tmp/lockstep-" + std::to_string(::geteuid());
}

std::string local_invite_file(const std::string& folder, std::uint16_t port) {
  return folder + "/host-" + std::to_string(port) + ".invites";
}

Result<LocalInvites> LocalInvites::leave(std::uint16_t port, const std::vector<std::string>& lines) {
  const std::string folder = local_invite_folder();
  if (Status checked = check_folder(folder, true); !checked) return checked.error();
  std::string text = std::string(k_first_line) + "\npid " + std::to_string(::getpid()) + "\n";
  for (const std::string& line : lines) text += line + "\n";
  const std::string path = local_invite_file(folder, port);
  const std::string partial = folder + "/.host-" + std::to_string(port) + ".invites." + std::to_string(::getpid());
  ::unlink(partial.c_str());
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return fail("cannot create '", partial, "': ", std::strerror(errno));
  const char* at = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += n;
    left -= static_cast<std::size_t>(n);
  }
  const int error = errno;
  const bool closed = ::close(fd) == 0;
  if (left > 0 || !closed || ::rename(partial.c_str(), path.c_str()) != 0) {
    ::unlink(partial.c_str());
    return fail("cannot write '", path, "': ", std::strerror(left > 0 ? error : errno));
  }
  return LocalInvites(path);
}

LocalInvites::LocalInvites(LocalInvites&& other) noexcept : path_(std::exchange(other.path_, {})) {}

LocalInvites& LocalInvites::operator=(LocalInvites&& other) noexcept {
  std::swap(path_, other.path_);
  return *this;
}

LocalInvites::~LocalInvites() {
  // Only while the file is still this host's: a later host on the port may have replaced it.
  if (path_.empty()) return;
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path_, k_max_file_bytes);
  const std::string mine = std::string(k_first_line) + "\npid " + std::to_string(::getpid()) + "\n";
  if (bytes && bytes->size() >= mine.size() && std::memcmp(bytes->data(), mine.data(), mine.size()) == 0) {
    ::unlink(path_.c_str());
  }
}

std::optional<LocalInvite> find_local_invite(std::uint16_t port, net::Role role) {
  const std::string folder = local_invite_folder();
  if (!check_folder(folder, false)) return std::nullopt;
  const std::string path = local_invite_file(folder, port);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !private_to_us(st)) return std::nullopt;
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, k_max_file_bytes);
  if (!bytes) return std::nullopt;
  std::istringstream in(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  std::string line;
  if (!std::getline(in, line) || line != k_first_line) return std::nullopt;
  if (!std::getline(in, line) || line.rfind("pid ", 0) != 0) return std::nullopt;
  char* end = nullptr;
  const long pid = std::strtol(line.c_str() + 4, &end, 10);
  if (end == line.c_str() + 4 || *end != '\0' || !alive(pid)) return std::nullopt;
  const std::string prefix = role == net::Role::player ? "invite " : "spectate-invite ";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return LocalInvite{line.substr(prefix.size()), path};
  }
  return std::nullopt;
}

}  // namespace lockstep::cli::detail
