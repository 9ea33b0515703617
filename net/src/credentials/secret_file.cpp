#include "lockstep/net/credentials/secret_file.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace lockstep::net {
namespace {

/// Names tried for the temporary before giving up: a name is taken only when someone planted a
/// file there, and a fresh random one escapes that.
constexpr int k_temporary_attempts = 8;
/// Random bytes in a temporary's name: 64 bits, which nobody guesses ahead of the write.
constexpr std::size_t k_name_random_bytes = 8;

/// Closes a descriptor when it goes.
struct Descriptor {
  int fd = -1;
  Descriptor() = default;
  explicit Descriptor(int opened) : fd(opened) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  /// Closes it now: false (errno set) when the close reports a failed write.
  bool close() { return ::close(std::exchange(fd, -1)) == 0; }
};

/// `path`'s folder and last name (the folder "." for a bare name).
std::pair<std::string, std::string> split(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

/// `.NAME.<16 random hex digits>.tmp` beside `name`: dot-named, so listings pass over it.
std::string temporary_name(const std::string& folder, const std::string& name) {
  std::array<unsigned char, k_name_random_bytes> random{};
  randombytes_buf(random.data(), random.size());
  std::array<char, 2 * k_name_random_bytes + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), random.data(), random.size());
  return folder + "/." + name + "." + hex.data() + ".tmp";
}

/// Writes all of `bytes`; false with errno set when it cannot.
bool write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

/// Makes a rename in `folder` survive a crash. Best effort: some file systems refuse to sync a
/// folder, and the file is in place either way.
void sync_folder(const std::string& folder) {
  const Descriptor dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd >= 0) static_cast<void>(::fsync(dir.fd));
}

/// The temporary, created with nothing there before it (O_EXCL: a link planted at the name is
/// neither followed nor replaced, and another name is drawn), owner-only before its first byte,
/// holding `bytes`, synced and closed. Its name, or errno's value.
std::pair<std::string, int> fill_temporary(const std::string& folder, const std::string& name,
                                           std::span<const std::byte> bytes) {
  for (int attempt = 0; attempt < k_temporary_attempts; ++attempt) {
    std::string temporary = temporary_name(folder, name);
    Descriptor file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (file.fd < 0 && errno == EEXIST) continue;
    if (file.fd < 0) return {{}, errno};
    // fchmod: a umask can take the owner's bits too, and 0600 is what the owner needs.
    if (::fchmod(file.fd, 0600) != 0 || !write_all(file.fd, bytes) || ::fsync(file.fd) != 0 || !file.close()) {
      const int error = errno;
      ::unlink(temporary.c_str());
      return {{}, error};
    }
    return {std::move(temporary), 0};
  }
  return {{}, EEXIST};
}

/// Moves `temporary` to `path` unless anything is there, a dangling link included: 0, or errno's
/// value (EEXIST when something is). renameat2(2)'s RENAME_NOREPLACE does it in one step; where the
/// file system or the kernel lacks it, link(2) does (which some file systems, vfat and many FUSE
/// ones, lack in turn), and the temporary goes.
int move_unless_taken(const std::string& temporary, const std::string& path) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) {
    const int failed = errno;
    ::unlink(temporary.c_str());
    return failed;
  }
#endif
  const int failed = ::link(temporary.c_str(), path.c_str()) == 0 ? 0 : errno;
  ::unlink(temporary.c_str());
  return failed;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// Why a file that is open to group or others is refused, with the way out.
Error open_to_others(const std::string& path, mode_t mode) {
  std::array<char, 8> octal{};
  std::snprintf(octal.data(), octal.size(), "%04o", static_cast<unsigned>(mode & 07777));
  const char* how = (mode & 044) != 0 ? "readable by others" : (mode & 022) != 0 ? "writable by others" : "open to others";
  return fail("'", path, "' is ", how, " (mode ", octal.data(), "); chmod 600 it");
}

}  // namespace

Status write_secret_file(const std::string& path, std::span<const std::byte> bytes, std::string_view what,
                         ExistingFile existing) {
  const auto cannot = [&](int error) { return fail("cannot write the ", what, " to '", path, "': ", std::strerror(error)); };
  if (sodium_init() < 0) return fail("cannot write the ", what, " to '", path, "': libsodium cannot start (no source of randomness)");
  const auto [folder, name] = split(path);
  const auto [temporary, error] = fill_temporary(folder, name, bytes);
  if (temporary.empty()) return cannot(error);
  if (existing == ExistingFile::replace) {
    // rename(2) replaces whatever is at `path` (a link itself, never what it points to), atomically.
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      const int failed = errno;
      ::unlink(temporary.c_str());
      return cannot(failed);
    }
  } else if (const int failed = move_unless_taken(temporary, path); failed != 0) {
    if (failed == EEXIST) return fail("'", path, "' exists: a ", what, " is never written over another file");
    return cannot(failed);
  }
  sync_folder(folder);
  return {};
}

Result<std::vector<std::byte>> read_secret_file(const std::string& path, std::uint64_t max_bytes) {
  // O_NOFOLLOW: a link at the name is refused (ELOOP), O_NONBLOCK: a FIFO does not wait for a writer.
  Descriptor file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (file.fd < 0) {
    const int error = errno;
    struct stat link {};
    if (error == ELOOP && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      return fail("'", path, "' is a symbolic link: a secret is read from its own file, never through a link");
    }
    return fail("cannot open '", path, "': ", std::strerror(error));
  }
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) return fail("cannot read '", path, "': ", std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return fail("'", path, "' is not a regular file (", kind_of(info.st_mode), ")");
  if (info.st_uid != ::geteuid()) {
    return fail("'", path, "' belongs to another user (uid ", static_cast<unsigned long>(info.st_uid),
                "): a secret is read only from a file of this user's");
  }
  if ((info.st_mode & 077) != 0) return open_to_others(path, info.st_mode);
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes) return fail("'", path, "' is ", size, " bytes, over the ", max_bytes, "-byte bound");
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(file.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : 0;
      sodium_memzero(bytes.data(), bytes.size());
      if (n == 0) return fail("'", path, "' shrank while it was read");
      return fail("cannot read '", path, "': ", std::strerror(error));
    }
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

void wipe_secret(std::span<std::byte> bytes) { sodium_memzero(bytes.data(), bytes.size()); }

}  // namespace lockstep::net
