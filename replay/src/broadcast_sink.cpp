#include "lockstep/replay/broadcast_sink.hpp"

#include <filesystem>
#include <random>
#include <system_error>

#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/replay/regular_file.hpp"

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
  return write_file_whole(dir_ + "/" + name, dir_ + "/." + name + ".part", bytes, "the broadcast's");
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
