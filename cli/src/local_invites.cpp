#include "lockstep/cli/detail/local_invites.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>

#include "lockstep/net/credentials/secret_file.hpp"

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

/// The next line of `text` (without its newline), taken off the front; nothing at the end.
std::optional<std::string_view> next_line(std::string_view& text) {
  if (text.empty()) return std::nullopt;
  const std::size_t end = std::min(text.find('\n'), text.size());
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(std::min(end + 1, text.size()));
  return line;
}

/// The code for `role` in a file's `text`, when its host still runs. Reads views of the text:
/// no copy of another code is made.
std::optional<LocalInvite> invite_in(std::string_view text, net::Role role, const std::string& path) {
  std::optional<std::string_view> line = next_line(text);
  if (!line || *line != k_first_line) return std::nullopt;
  line = next_line(text);
  if (!line || line->substr(0, 4) != "pid ") return std::nullopt;
  const std::string pid_text(line->substr(4));
  char* end = nullptr;
  const long pid = std::strtol(pid_text.c_str(), &end, 10);
  if (end == pid_text.c_str() || *end != '\0' || !alive(pid)) return std::nullopt;
  const std::string_view prefix = role == net::Role::player ? "invite " : "spectate-invite ";
  while ((line = next_line(text))) {
    if (line->substr(0, prefix.size()) == prefix) return LocalInvite{std::string(line->substr(prefix.size())), path};
  }
  return std::nullopt;
}

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
  std::size_t bytes = text.size();
  for (const std::string& line : lines) bytes += line.size() + 1;
  text.reserve(bytes);  // the codes are appended without a reallocation: the one wipe covers them
  for (const std::string& line : lines) text.append(line).append("\n");
  const std::string path = local_invite_file(folder, port);
  const Status written = net::write_secret_file(path, std::as_bytes(std::span(text)), "local invites", net::ExistingFile::replace);
  net::wipe_secret(std::as_writable_bytes(std::span(text)));
  if (!written) return written.error();
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
  Result<std::vector<std::byte>> bytes = net::read_secret_file(path_, k_max_file_bytes);
  if (!bytes) return;
  const std::string mine = std::string(k_first_line) + "\npid " + std::to_string(::getpid()) + "\n";
  if (bytes->size() >= mine.size() && std::memcmp(bytes->data(), mine.data(), mine.size()) == 0) ::unlink(path_.c_str());
  net::wipe_secret(bytes.value());
}

std::optional<LocalInvite> find_local_invite(std::uint16_t port, net::Role role) {
  const std::string folder = local_invite_folder();
  if (!check_folder(folder, false)) return std::nullopt;
  const std::string path = local_invite_file(folder, port);
  // Owner-only, this user's, a regular file and not a link: secret_file.hpp checks all four.
  Result<std::vector<std::byte>> bytes = net::read_secret_file(path, k_max_file_bytes);
  if (!bytes) return std::nullopt;
  std::optional<LocalInvite> found = invite_in(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                                               role, path);
  net::wipe_secret(bytes.value());
  return found;
}

}  // namespace lockstep::cli::detail
