#include "lockstep/replay/replay_file.hpp"

#include <algorithm>
#include <cstring>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/step_probe.hpp"
#include "lockstep/replay/regular_file.hpp"
#include "chunk_parser.hpp"

namespace lockstep::replay {

std::string_view chunk_type_name(std::uint32_t type) {
  if (type > 0xFF) return "unknown";
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::header: return "header";
    case ChunkType::start_snapshot: return "start snapshot";
    case ChunkType::inputs: return "inputs";
    case ChunkType::hashes: return "hashes";
    case ChunkType::keyframe: return "keyframe";
    case ChunkType::end: return "end";
    case ChunkType::phase_hashes: return "phase hashes";
  }
  return "unknown";
}

std::string printable(std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xf];
    }
  }
  return out;
}

Result<std::vector<std::byte>> keyframe_snapshot(const ReplayFile& file, std::size_t index) {
  const Keyframe& k = file.keyframes.at(index);
  if (k.encoding == KeyframeEncoding::whole) return k.data;
  Result<std::vector<std::byte>> snapshot = decode_keyframe_delta(k.data, file.keyframes.front().data);
  if (!snapshot) return fail("the keyframe at tick ", k.tick, ": ", snapshot.error().message);
  return snapshot;
}

std::optional<std::uint64_t> ReplayFile::hash_at(std::uint64_t tick) const {
  if (end && end->tick == tick) return end->hash;
  if (tick == header.start_tick) return header.start_hash;
  auto it = std::lower_bound(hashes.begin(), hashes.end(), tick,
                             [](const TickHash& h, std::uint64_t t) { return h.tick < t; });
  if (it != hashes.end() && it->tick == tick) return it->hash;
  return std::nullopt;
}

std::vector<PhaseCheckpoint> ReplayFile::phases_at(std::uint64_t tick) const {
  auto it = std::lower_bound(phase_hashes.begin(), phase_hashes.end(), tick,
                             [](const PhaseCheckpoint& c, std::uint64_t t) { return c.tick < t; });
  std::vector<PhaseCheckpoint> at;
  for (; it != phase_hashes.end() && it->tick == tick; ++it) at.push_back(*it);
  return at;
}

std::vector<std::uint64_t> ReplayFile::phase_ticks() const {
  std::vector<std::uint64_t> ticks;
  for (const PhaseCheckpoint& c : phase_hashes) {
    if (ticks.empty() || ticks.back() != c.tick) ticks.push_back(c.tick);
  }
  return ticks;
}

namespace {

using detail::ChunkHead;
using detail::ChunkParser;
using detail::ChunkWalk;
using detail::count_size;
using detail::SpanSource;
using detail::walk_chunks;

class FileSource {
 public:
  explicit FileSource(const RegularFile& file) : file_(file) {}
  [[nodiscard]] std::uint64_t size() const { return file_.size(); }
  Result<std::span<const std::byte>> read(std::uint64_t offset, std::size_t size) {
    buffer_.resize(size);
    if (Status read = file_.read_at(offset, buffer_); !read) return read.error();
    return std::span<const std::byte>(buffer_);
  }

 private:
  const RegularFile& file_;
  std::vector<std::byte> buffer_;  ///< reused: at most one chunk
};

/// The 16-byte preamble (or what there is of it in a short file).
Status check_preamble(std::span<const std::byte> head, std::uint64_t file_size) {
  const std::size_t magic_bytes = k_file_magic.size();
  auto matches_magic = [&](std::size_t n) { return std::memcmp(head.data(), k_file_magic.data(), n) == 0; };
  if (file_size < k_preamble_bytes) {
    if (file_size == 0) return fail("empty file: not a lockstep replay file");
    if (matches_magic(std::min(head.size(), magic_bytes))) {
      return fail("truncated header: the file ends at byte ", file_size);
    }
    return fail("not a lockstep replay file");
  }
  if (!matches_magic(magic_bytes)) return fail("not a lockstep replay file");
  ByteReader preamble(head.subspan(magic_bytes, 8));
  const std::uint32_t version = preamble.u32();
  if (version > k_format_version) {
    return fail("replay format version ", version, " is newer than this build's version ",
                k_format_version, "; a newer lockstep reads it");
  }
  if (version == 1) {
    return fail("replay format version 1 is older than this build's version ", k_format_version,
                ", which no longer reads it; play it with lockstep 0.2, or record it again");
  }
  if (version < 1) return fail("replay format version ", version, " is not a version lockstep ever wrote");
  return {};
}

template <class Source>
Result<ReplayFile> parse_source(Source& source) {
  const std::uint64_t size = source.size();
  Result<std::span<const std::byte>> head = source.read(0, static_cast<std::size_t>(std::min<std::uint64_t>(size, k_preamble_bytes)));
  if (!head) return head.error();
  if (Status preamble = check_preamble(head.value(), size); !preamble) return preamble.error();

  ReplayFile file;
  file.sizes.header = k_preamble_bytes;
  ChunkParser parser(file);
  std::uint64_t index = 1;
  Result<ChunkWalk> walk = walk_chunks(
      source, k_preamble_bytes, 0, index,
      [&](ChunkType type, const ChunkHead& chunk, std::span<const std::byte> payload, std::uint64_t at,
          const std::string& where) -> Status {
        Status parsed = parser.parse(type, chunk.first, chunk.last, payload, at, where);
        if (parsed) count_size(file.sizes, type, chunk.bytes + chunk.length + k_chunk_checksum_bytes);
        return parsed;
      },
      [&] { return file.end.has_value(); });
  if (!walk) return walk.error();
  const std::uint64_t offset = walk->offset;
  if (file.end && offset < size) return fail("data after the end record at byte ", offset);
  if (walk->cut) {
    file.truncated = true;
    file.truncated_at_byte = offset;
    file.sizes.truncated = size - offset;
  }
  if (!parser.have_header()) return fail("truncated header: the file ends at byte ", size);
  return file;
}

}  // namespace

Result<ReplayFile> parse_replay(std::span<const std::byte> bytes) {
  SpanSource source(bytes);
  return parse_source(source);
}

Result<ReplayFile> read_replay_file(const std::string& path) {
  Result<RegularFile> file = RegularFile::open(path, k_max_file_bytes);
  if (!file) return file.error();
  FileSource source(file.value());
  return parse_source(source);
}

}  // namespace lockstep::replay
