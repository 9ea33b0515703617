#include "lockstep/replay/broadcast_sink.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "lockstep/engine/hash_hex.hpp"

namespace lockstep::replay {

Result<std::unique_ptr<BroadcastSink>> BroadcastSink::create(const std::string& dir, std::uint32_t tick_rate_hz) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return fail("cannot make the broadcast directory '", dir, "': ", error.message());
  if (!fs::is_directory(dir, error)) return fail("the broadcast directory '", dir, "' is not a directory");
  BroadcastManifest manifest;
  // Not part of anything simulated: only a name no earlier broadcast in the directory used.
  std::random_device random;
  const std::uint64_t id = (std::uint64_t{random()} << 32) ^ random();
  manifest.id = hash_hex(id);
  manifest.tick_rate_hz = tick_rate_hz;
  return std::unique_ptr<BroadcastSink>(new BroadcastSink(dir, std::move(manifest)));
}

Status BroadcastSink::publish(const std::string& name, std::span<const std::byte> bytes) const {
  const std::string path = dir_ + "/" + name;
  const std::string aside = dir_ + "/." + name + ".part";
  const int fd = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot write the broadcast's '", aside, "': ", std::strerror(errno));
  const std::byte* data = bytes.data();
  std::size_t size = bytes.size();
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int write_error = errno;
      ::close(fd);
      ::unlink(aside.c_str());
      return fail("cannot write the broadcast's '", aside, "': ", std::strerror(write_error));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (std::rename(aside.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    ::unlink(aside.c_str());
    return fail("cannot put the broadcast's '", path, "' in place: ", std::strerror(rename_error));
  }
  return {};
}

Status BroadcastSink::write(std::span<const std::byte> bytes, const WrittenChunks& what) {
  if (bytes.size() > k_max_segment_bytes) {
    return fail("a broadcast segment of ", bytes.size(), " bytes is over the ", k_max_segment_bytes, "-byte bound");
  }
  if (what.opening != (next_number_ == 0)) return fail("the broadcast's opening must come first, and once");
  if (next_number_ > k_max_segment_number) return fail("the broadcast has run out of segment numbers");
  if (Status written = publish(manifest_.segment_name(next_number_), bytes); !written) return written;
  if (what.opening) {
    manifest_.start_tick = what.first_tick;
    manifest_.opening_bytes = bytes.size();
  } else {
    if (manifest_.segments.size() == k_broadcast_window) manifest_.segments.erase(manifest_.segments.begin());
    manifest_.segments.push_back({next_number_, what.first_tick, what.last_tick, what.keyframe, bytes.size()});
  }
  ++next_number_;
  if (what.end) manifest_.end = TickHash{what.last_tick, what.end_hash};
  const std::string text = encode_manifest(manifest_);
  return publish(std::string(k_broadcast_manifest_name),
                 std::span(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

}  // namespace lockstep::replay
