#include "lockstep/replay/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

}  // namespace

Result<RegularFile> RegularFile::open(const std::string& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail("cannot open '", path, "': ", std::strerror(errno));
  RegularFile file(fd, 0, path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) return fail("cannot read '", path, "': ", std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return fail("'", path, "' is not a regular file (", kind_of(info.st_mode), ")");
  file.size_ = static_cast<std::uint64_t>(info.st_size);
  if (file.size_ > max_bytes) return fail("'", path, "' is ", file.size_, " bytes, over the ", max_bytes, "-byte bound");
  return file;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RegularFile::read_at(std::uint64_t offset, std::span<std::byte> out) const {
  std::size_t got = 0;
  while (got < out.size()) {
    const ::ssize_t n = ::pread(fd_, out.data() + got, out.size() - got, static_cast<::off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read '", path_, "': ", std::strerror(errno));
    if (n == 0) return fail("'", path_, "' shrank while it was read");
    got += static_cast<std::size_t>(n);
  }
  return {};
}

Result<std::vector<std::byte>> read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  Result<RegularFile> file = RegularFile::open(path, max_bytes);
  if (!file) return file.error();
  std::vector<std::byte> bytes(static_cast<std::size_t>(file->size()));
  if (Status read = file->read_at(0, bytes); !read) return read.error();
  return bytes;
}

Status write_file_whole(const std::string& path, const std::string& aside, std::span<const std::byte> bytes,
                        std::string_view what) {
  const int fd = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot write ", what, " '", aside, "': ", std::strerror(errno));
  const std::byte* data = bytes.data();
  std::size_t size = bytes.size();
  while (size > 0) {
    const ::ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int write_error = errno;
      ::close(fd);
      ::unlink(aside.c_str());
      return fail("cannot write ", what, " '", aside, "': ", std::strerror(write_error));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (std::rename(aside.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    ::unlink(aside.c_str());
    return fail("cannot put ", what, " '", path, "' in place: ", std::strerror(rename_error));
  }
  return {};
}

}  // namespace lockstep::replay
