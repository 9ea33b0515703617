#include "lockstep/replay/replay_stream.hpp"

#include <optional>
#include <string>

#include "chunk_parser.hpp"

namespace lockstep::replay {

using detail::ChunkHead;
using detail::ChunkParser;
using detail::ChunkWalk;
using detail::count_size;
using detail::SpanSource;
using detail::walk_chunks;

struct ReplayStream::State {
  ReplayFile file;
  ChunkParser parser{file, false};
  std::uint64_t bytes = 0;   ///< the stream's bytes so far
  std::uint64_t chunks = 1;  ///< the number of the next chunk
  bool keep_keyframes = false;       ///< only to find the one to start at; a stream plays forward
  std::optional<std::string> failed; ///< a segment broke the format: the stream is over
};

ReplayStream::ReplayStream() : state_(std::make_unique<State>()) {}
ReplayStream::ReplayStream(ReplayStream&&) noexcept = default;
ReplayStream& ReplayStream::operator=(ReplayStream&&) noexcept = default;
ReplayStream::~ReplayStream() = default;

const ReplayFile& ReplayStream::file() const { return state_->file; }

Result<ReplayStream> ReplayStream::open(std::span<const std::byte> opening) {
  Result<ReplayFile> parsed = parse_replay(opening);
  if (!parsed) return parsed.error();
  if (parsed->truncated || parsed->last_tick != parsed->header.start_tick || parsed->end) {
    return fail("a broadcast's opening holds the header and any start snapshot, whole, and nothing else");
  }
  ReplayStream stream;
  stream.state_->file = std::move(parsed).value();
  stream.state_->bytes = opening.size();
  stream.state_->chunks = stream.state_->file.header.start_tick > 0 ? 3 : 2;
  return stream;
}

Result<ReplayStream> ReplayStream::open_at_keyframe(std::span<const std::byte> opening,
                                                    std::span<const std::byte> segment) {
  Result<ReplayStream> stream = open(opening);
  if (!stream) return stream;
  // The segment on its own, after the opening: its ticks, their hashes, and the keyframe last.
  ReplayStream scratch;
  scratch.state_->file.header = stream->file().header;
  scratch.state_->file.inputs.assign(scratch.file().header.players, InputRuns(scratch.file().header.input_bytes));
  scratch.state_->file.last_tick = scratch.file().header.start_tick;
  scratch.state_->parser = ChunkParser(scratch.state_->file, true);
  scratch.state_->bytes = stream->state_->bytes;
  scratch.state_->chunks = stream->state_->chunks;
  scratch.state_->keep_keyframes = true;
  if (Status appended = scratch.append(segment); !appended) return appended.error();
  const ReplayFile& seen = scratch.file();
  if (seen.keyframes.empty() || seen.keyframes.back().tick != seen.last_tick || seen.end) {
    return fail("the segment to start from does not end with a keyframe");
  }
  const Keyframe& keyframe = seen.keyframes.back();
  if (keyframe.encoding != KeyframeEncoding::whole) return fail("the keyframe to start from is not stored whole");
  // Rebased: the stream starts at the keyframe, as a recording that starts there would.
  ReplayFile& file = stream->state_->file;
  file.header.start_tick = keyframe.tick;
  file.header.start_hash = seen.hashes.back().hash;
  file.start_snapshot = keyframe.data;
  file.inputs.assign(file.header.players, InputRuns(file.header.input_bytes));
  file.last_tick = keyframe.tick;
  file.hashes.clear();
  stream->state_->parser = ChunkParser(file, false);
  stream->state_->bytes = scratch.state_->bytes;
  stream->state_->chunks = scratch.state_->chunks;
  return stream;
}

Status ReplayStream::check(std::span<const std::byte> segment) const {
  SpanSource source(segment);
  std::uint64_t index = state_->chunks;
  Result<ChunkWalk> walk = walk_chunks(
      source, 0, state_->bytes, index,
      [](ChunkType, const ChunkHead&, std::span<const std::byte>, std::uint64_t, const std::string&) { return Status{}; },
      [] { return false; });
  if (!walk) return walk.error();
  if (walk->cut) return fail("the segment at byte ", state_->bytes, " ends inside a chunk (at byte ", state_->bytes + walk->offset, ")");
  if (segment.empty()) return fail("an empty segment at byte ", state_->bytes);
  return {};
}

Status ReplayStream::append(std::span<const std::byte> segment) {
  State& state = *state_;
  if (state.failed) return fail("the stream broke earlier: ", *state.failed);
  if (segment.size() > k_max_file_bytes - std::min<std::uint64_t>(state.bytes, k_max_file_bytes)) {
    return fail("the stream would grow past ", k_max_file_bytes, " bytes, the most a recording holds");
  }
  if (Status checked = check(segment); !checked) return checked;
  SpanSource source(segment);
  Result<ChunkWalk> walk = walk_chunks(
      source, 0, state.bytes, state.chunks,
      [&](ChunkType type, const ChunkHead& chunk, std::span<const std::byte> payload, std::uint64_t at,
          const std::string& where) -> Status {
        Status parsed = state.parser.parse(type, chunk.first, chunk.last, payload, at, where);
        if (parsed) count_size(state.file.sizes, type, chunk.bytes + chunk.length + k_chunk_checksum_bytes);
        return parsed;
      },
      [] { return false; });
  if (!walk) {
    // Whole chunks that break the format's rules: what was parsed of them may be half-added.
    state.failed = walk.error().message;
    return walk.error();
  }
  state.bytes += segment.size();
  // Keyframes are for seeking, which a stream does not do: holding them would grow without end.
  if (!state.keep_keyframes) {
    for (Keyframe& k : state.file.keyframes) std::vector<std::byte>().swap(k.data);
  }
  return {};
}

}  // namespace lockstep::replay
