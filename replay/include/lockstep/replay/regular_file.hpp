#pragma once
/// Reading an untrusted file whole, within a bound. Only regular files are read: a FIFO, a device
/// (/dev/zero), a socket or a directory is refused at once — without blocking in open(2) on a FIFO
/// that has no writer — and a file over the bound is refused before anything is allocated.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/engine/result.hpp"

namespace lockstep::replay {

/// The whole of `path` if it is a regular file of at most `max_bytes`; otherwise one-line errors
/// such as "'x' is not a regular file (a FIFO)" or "'x' is 5000000000 bytes, over the
/// 4294967296-byte bound".
Result<std::vector<std::byte>> read_regular_file(const std::string& path, std::uint64_t max_bytes);

}  // namespace lockstep::replay
