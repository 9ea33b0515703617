#include "lockstep/replay/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep::replay {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// Closes the descriptor whatever path the reader leaves by.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

Result<std::vector<std::byte>> read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail("cannot open '", path, "': ", std::strerror(errno));
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) return fail("cannot read '", path, "': ", std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return fail("'", path, "' is not a regular file (", kind_of(info.st_mode), ")");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes) return fail("'", path, "' is ", size, " bytes, over the ", max_bytes, "-byte bound");
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ::ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read '", path, "': ", std::strerror(errno));
    if (n == 0) return fail("'", path, "' shrank while it was read");
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace lockstep::replay
