// libFuzzer target for what a viewer of a live broadcast reads from any web server: the manifest
// (a manifest that parses writes back to one that parses to the same values) and segments fed to
// a ReplayStream from the start or from a keyframe. The input is split at two offsets its first
// four bytes give: an opening, a segment (or keyframe segment) and another segment; the whole
// input is also tried as a manifest. Nothing may crash, and a segment that fails its checks must
// leave the stream as it was.

#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/replay/broadcast_manifest.hpp"
#include "lockstep/replay/replay_stream.hpp"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

void feed(lockstep::replay::ReplayStream& stream, std::span<const std::byte> segment) {
  const std::uint64_t before = stream.file().last_tick;
  const bool whole = stream.check(segment).ok();
  const bool appended = stream.append(segment).ok();
  check(!appended || whole);
  if (!whole) check(stream.file().last_tick == before);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::replay;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  if (auto manifest = parse_manifest(bytes); manifest.ok()) {
    const std::string text = encode_manifest(manifest.value());
    auto again = parse_manifest({reinterpret_cast<const std::byte*>(text.data()), text.size()});
    check(again.ok());
    check(again->id == manifest->id && again->tick_rate_hz == manifest->tick_rate_hz &&
          again->start_tick == manifest->start_tick && again->segments.size() == manifest->segments.size() &&
          again->end.has_value() == manifest->end.has_value() && again->live_tick() == manifest->live_tick());
  }
  if (size < 4) return 0;
  const std::span<const std::byte> rest = bytes.subspan(4);
  const std::size_t a = (std::size_t{data[0]} << 8 | data[1]) % (rest.size() + 1);
  const std::size_t b = a + (std::size_t{data[2]} << 8 | data[3]) % (rest.size() - a + 1);
  const auto opening = rest.first(a);
  const auto first = rest.subspan(a, b - a);
  const auto second = rest.subspan(b);
  if (auto stream = ReplayStream::open(opening); stream.ok()) {
    feed(stream.value(), first);
    feed(stream.value(), second);
  }
  if (auto stream = ReplayStream::open_at_keyframe(opening, first); stream.ok()) {
    check(stream->file().last_tick == stream->file().header.start_tick);
    feed(stream.value(), second);
  }
  return 0;
}
