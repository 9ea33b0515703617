#pragma once
/// Reading untrusted files within a bound. Only regular files are opened: a FIFO, a device
/// (/dev/zero), a socket or a directory is refused at once — without blocking in open(2) on a FIFO
/// that has no writer — and a file over the bound is refused before anything is allocated.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/engine/result.hpp"

namespace lockstep::replay {

/// An open regular file of known size, read by position. Move-only; closes its descriptor.
class RegularFile {
 public:
  /// Opens `path` if it is a regular file of at most `max_bytes`; otherwise a one-line error
  /// such as "'x' is not a regular file (a FIFO)" or "'x' is 5000000000 bytes, over the
  /// 4294967296-byte bound".
  static Result<RegularFile> open(const std::string& path, std::uint64_t max_bytes);

  RegularFile(RegularFile&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)) {}
  RegularFile& operator=(RegularFile&& other) noexcept {
    std::swap(fd_, other.fd_);
    size_ = other.size_;
    path_ = std::move(other.path_);
    return *this;
  }
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] const std::string& path() const { return path_; }

  /// Reads exactly `out.size()` bytes from `offset` (which the caller keeps within size()).
  [[nodiscard]] Status read_at(std::uint64_t offset, std::span<std::byte> out) const;

 private:
  RegularFile(int fd, std::uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}

  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string path_;
};

/// The whole of `path`, if it is a regular file of at most `max_bytes` (errors as above).
Result<std::vector<std::byte>> read_regular_file(const std::string& path, std::uint64_t max_bytes);

/// Writes `bytes` to `path` whole or not at all: into `aside` (a name in the same folder) first,
/// then renamed over `path`. A reader sees the old file or the new one, never part of one.
/// `what` names the file in errors ("the broadcast's", "the bundle").
Status write_file_whole(const std::string& path, const std::string& aside, std::span<const std::byte> bytes,
                        std::string_view what);

}  // namespace lockstep::replay
