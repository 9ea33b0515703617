#pragma once
// The chunk parser every reader of the format shares (src/, not installed): parse_replay reads a
// whole file through it, ReplayStream a broadcast segment by segment. FORMAT.md is the contract.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/step_probe.hpp"
#include "lockstep/replay/format.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {

std::string_view chunk_type_name(std::uint32_t type);

namespace detail {


inline std::uint32_t payload_bound(ChunkType type) {
  switch (type) {
    case ChunkType::header: return k_max_header_payload_bytes;
    case ChunkType::start_snapshot: return k_max_snapshot_bytes;
    case ChunkType::inputs: return k_max_inputs_payload_bytes;
    case ChunkType::hashes: return k_max_hashes_payload_bytes;
    case ChunkType::keyframe: return k_max_snapshot_bytes;
    case ChunkType::end: return 8;
    case ChunkType::phase_hashes: return k_max_phase_hashes_payload_bytes;
  }
  return 0;
}

/// Number of multiples of k in [first, last], k ≥ 1.
inline std::uint64_t multiples_in(std::uint64_t first, std::uint64_t last, std::uint64_t k) {
  const std::uint64_t up_to_last = last / k + 1;  // multiples in [0, last]
  const std::uint64_t below_first = first == 0 ? 0 : (first - 1) / k + 1;
  return up_to_last - below_first;
}

/// Parses one chunk's payload into `file`. `where` prefixes every message ("chunk 4 (inputs)
/// at byte 312").
class ChunkParser {
 public:
  explicit ChunkParser(ReplayFile& file) : file_(&file) {}
  /// A parser for the rest of `file`, whose header (and start snapshot) it already holds. With
  /// `from_anywhere`, the first inputs chunk may start at any later tick: a broadcast joined at
  /// a segment, whose ticks before it are not wanted.
  ChunkParser(ReplayFile& file, bool from_anywhere) : file_(&file), chunks_(1), accept_gap_(from_anywhere) {}

  Status parse(ChunkType type, std::uint64_t first, std::uint64_t last,
               std::span<const std::byte> payload, std::uint64_t offset, const std::string& where) {
    const bool have_header = chunks_ > 0;
    ++chunks_;
    if (!have_header && type != ChunkType::header) return fail(where, ": the first chunk must be the header");
    if (have_header && type == ChunkType::header) return fail(where, ": a second header");
    if (file_->end) return fail(where, ": data after the end record");
    if (need_start_snapshot_ && type != ChunkType::start_snapshot) {
      return fail(where, ": the start snapshot must follow the header");
    }
    ByteReader in(payload);
    switch (type) {
      case ChunkType::header: return parse_header(in, first, last, where);
      case ChunkType::start_snapshot:
        if (!need_start_snapshot_) return fail(where, ": a start snapshot in a replay that starts at tick 0");
        if (first != file_->header.start_tick || last != first) return fail(where, ": ticks out of order");
        // A replay that starts past tick 0 has no other start state: without one nothing in it
        // can be played, and refusing it here keeps every reader from taking it for a replay.
        if (payload.empty()) return fail(where, ": an empty start snapshot, for a replay that starts at tick ", first);
        file_->start_snapshot.assign(payload.begin(), payload.end());
        need_start_snapshot_ = false;
        return {};
      case ChunkType::inputs: return parse_inputs(in, first, last, where);
      case ChunkType::hashes: return parse_hashes(in, first, last, where);
      case ChunkType::phase_hashes: return parse_phase_hashes(in, first, last, where);
      case ChunkType::keyframe:
        if (first != last || first <= file_->header.start_tick || first > file_->last_tick ||
            (!file_->keyframes.empty() && first <= file_->keyframes.back().tick)) {
          return fail(where, ": keyframe tick ", first, " is out of order");
        }
        // Only a hashed tick's keyframe can be trusted (FORMAT.md, Trust), and the rule bounds
        // keyframes by the hashes before them: a file of empty keyframe chunks cannot make the
        // reader hold several times its size.
        if (!file_->hashes.empty() ? file_->hashes.back().tick != first : true) {
          return fail(where, ": a keyframe of tick ", first, ", whose hash the file does not record");
        }
        phases_may_follow_ = false;
        return parse_keyframe(in, first, offset, where);
      case ChunkType::end: {
        const std::uint64_t hash = in.u64();
        if (!in.at_end()) return fail(where, ": malformed end record");
        if (first != last || first != file_->last_tick) {
          return fail(where, ": ends at tick ", first, " but inputs end at tick ", file_->last_tick);
        }
        if (Status agrees = check_end_hash(first, hash, where); !agrees) return agrees;
        file_->end = TickHash{first, hash};
        return {};
      }
    }
    return fail(where, ": unknown chunk type");
  }

  [[nodiscard]] bool have_header() const { return chunks_ > 0 && !need_start_snapshot_; }

 private:
  Status parse_header(ByteReader& in, std::uint64_t first, std::uint64_t last, const std::string& where) {
    ReplayHeader& h = file_->header;
    h.engine_version = in.text(k_max_text_bytes);
    h.simulation = in.text(k_max_text_bytes);
    h.compatibility_id = in.u64();
    h.build = in.text(k_max_text_bytes);
    h.seed = in.u64();
    h.players = in.u32();
    h.input_bytes = in.u32();
    h.input_layout = in.text(k_max_text_bytes);
    h.hash_every = in.u32();
    h.keyframe_every = in.u32();
    h.start_tick = in.u64();
    h.start_hash = in.u64();
    std::span<const std::byte> config = in.blob(k_max_header_payload_bytes);
    if (!in.at_end()) return fail(where, ": malformed header");
    h.config.assign(config.begin(), config.end());
    if (h.players < 1 || h.players > k_max_replay_players) {
      return fail(where, ": impossible player count ", h.players, " (1 to ", k_max_replay_players, ")");
    }
    if (h.input_bytes < 1 || h.input_bytes > k_max_input_bytes) {
      return fail(where, ": impossible input size ", h.input_bytes, " bytes (1 to ", k_max_input_bytes, ")");
    }
    if (h.start_tick >= k_tick_limit) return fail(where, ": impossible start tick ", h.start_tick);
    if (first != h.start_tick || last != h.start_tick) return fail(where, ": ticks out of order");
    file_->inputs.assign(h.players, InputRuns(h.input_bytes));
    file_->last_tick = h.start_tick;
    need_start_snapshot_ = h.start_tick > 0;
    return {};
  }

  /// The end record repeats the hash of its tick: when the file already holds that hash (the
  /// last one recorded, or with no ticks the start hash), both must agree, or the players and
  /// tools that trust one or the other would verify the same file against different hashes.
  Status check_end_hash(std::uint64_t tick, std::uint64_t hash, const std::string& where) const {
    const ReplayHeader& h = file_->header;
    if (tick == h.start_tick && hash != h.start_hash) {
      return fail(where, ": the end hash ", hash_hex(hash), " contradicts the start hash ", hash_hex(h.start_hash),
                  " of the same tick ", tick);
    }
    if (!file_->hashes.empty() && file_->hashes.back().tick == tick && file_->hashes.back().hash != hash) {
      return fail(where, ": the end hash ", hash_hex(hash), " contradicts the hash ", hash_hex(file_->hashes.back().hash),
                  " recorded for tick ", tick);
    }
    return {};
  }

  Status parse_inputs(ByteReader& in, std::uint64_t first, std::uint64_t last, const std::string& where) {
    if ((first != file_->last_tick + 1 && !(accept_gap_ && first > file_->last_tick)) || last < first) {
      return fail(where, ": ticks ", first, "..", last, " out of order (inputs so far end at tick ",
                  file_->last_tick, ")");
    }
    const std::uint64_t ticks = last - first + 1;
    if (ticks > k_max_ticks_per_chunk || last >= k_tick_limit) {
      return fail(where, ": impossible tick range ", first, "..", last);
    }
    const ReplayHeader& h = file_->header;
    for (std::uint32_t p = 0; p < h.players; ++p) {
      const std::uint64_t runs = in.varint(ticks);
      if (!in.ok() || runs < 1) return fail(where, ": impossible run count for player ", p);
      // Each run costs at least 1 + input_bytes: bound the count by what the payload can hold.
      if (runs > in.remaining() / (1 + h.input_bytes)) return fail(where, ": run count ", runs, " overruns the chunk");
      std::uint64_t tick = first;
      for (std::uint64_t r = 0; r < runs; ++r) {
        const std::uint64_t length = in.varint(last - tick + 1);
        std::span<const std::byte> input = in.bytes(h.input_bytes);
        if (!in.ok() || length < 1) return fail(where, ": impossible or truncated run for player ", p);
        file_->inputs[p].add(tick, input);
        tick += length;
      }
      if (tick != last + 1) return fail(where, ": player ", p, "'s runs cover ", tick - first, " of ", ticks, " ticks");
    }
    if (!in.at_end()) return fail(where, ": unexpected bytes after the input runs");
    file_->last_tick = last;
    accept_gap_ = false;
    last_inputs_first_ = first;
    phases_may_follow_ = true;  // once, for exactly this chunk's range, before any keyframe
    return {};
  }

  Status parse_keyframe(ByteReader& in, std::uint64_t tick, std::uint64_t offset, const std::string& where) {
    Keyframe k;
    k.tick = tick;
    k.offset = offset;
    const std::uint8_t encoding = in.u8();
    k.snapshot_bytes = static_cast<std::uint32_t>(in.varint(k_max_snapshot_bytes));
    if (!in.ok()) return fail(where, ": malformed keyframe");
    std::span<const std::byte> data = in.bytes(in.remaining());
    switch (static_cast<KeyframeEncoding>(encoding)) {
      case KeyframeEncoding::whole:
        if (data.size() != k.snapshot_bytes) return fail(where, ": a whole keyframe of the wrong size");
        break;
      case KeyframeEncoding::from_first:
        // Against the first keyframe, held whole and of the same size: the decoded size is
        // bounded by bytes the file holds.
        if (file_->keyframes.empty() || file_->keyframes.front().encoding != KeyframeEncoding::whole ||
            file_->keyframes.front().snapshot_bytes != k.snapshot_bytes) {
          return fail(where, ": a keyframe stored as a difference from a first keyframe it does not match");
        }
        break;
      default: return fail(where, ": unknown keyframe encoding ", encoding);
    }
    k.encoding = static_cast<KeyframeEncoding>(encoding);
    k.data.assign(data.begin(), data.end());
    file_->keyframes.push_back(std::move(k));
    return {};
  }

  /// Names, then records of (tick offset, checkpoints), as FORMAT.md says; every count is
  /// bounded by the bytes left before anything is added.
  Status parse_phase_hashes(ByteReader& in, std::uint64_t first, std::uint64_t last, const std::string& where) {
    const std::uint64_t previous = file_->phase_hashes.empty() ? file_->header.start_tick : file_->phase_hashes.back().tick;
    // As the writer writes them: right after the inputs chunk (and its hashes) of the same range,
    // once, with the run's table of names so far (the file's, perhaps grown at its end).
    if (last < first || first <= previous || !phases_may_follow_ || first != last_inputs_first_ || last != file_->last_tick) {
      return fail(where, ": phase hashes for ticks ", first, "..", last, " out of order");
    }
    phases_may_follow_ = false;
    const std::uint64_t name_count = in.varint(k_max_phase_names);
    if (!in.ok() || name_count == 0 || name_count < file_->phase_names.size()) return fail(where, ": malformed phase names");
    for (std::size_t i = 0; i < static_cast<std::size_t>(name_count); ++i) {
      const std::string name = in.text(k_max_phase_name_bytes);
      if (!in.ok() || name.empty()) return fail(where, ": malformed phase name");
      if (i < file_->phase_names.size()) {
        if (file_->phase_names[i] != name) return fail(where, ": phase names that are not the file's");
        continue;
      }
      if (std::find(file_->phase_names.begin(), file_->phase_names.end(), name) != file_->phase_names.end()) {
        return fail(where, ": the phase name '", printable(name), "' twice");
      }
      file_->phase_names.push_back(name);
    }
    const std::uint64_t records = in.varint(last - first + 1);
    if (!in.ok() || records == 0) return fail(where, ": malformed phase hash records");
    std::uint64_t tick = previous;
    for (std::uint64_t r = 0; r < records; ++r) {
      const std::uint64_t at = first + in.varint(last - first);
      const std::uint64_t count = in.varint(k_max_checkpoints_per_tick);
      // Each checkpoint takes at least 10 bytes: a count the chunk cannot hold is refused here.
      if (!in.ok() || at <= tick || count == 0 || count > in.remaining() / 10) {
        return fail(where, ": malformed phase hash record ", r + 1);
      }
      tick = at;
      for (std::uint64_t c = 0; c < count; ++c) {
        const auto substep = static_cast<std::uint32_t>(in.varint(0xFFFF));
        const std::uint64_t name = in.varint(name_count - 1);
        const std::uint64_t hash = in.u64();
        if (!in.ok()) return fail(where, ": malformed phase hash record ", r + 1);
        file_->phase_hashes.push_back({tick, substep, static_cast<std::uint32_t>(name), hash});
      }
    }
    if (!in.at_end()) return fail(where, ": bytes after the phase hash records");
    return {};
  }

  Status parse_hashes(ByteReader& in, std::uint64_t first, std::uint64_t last, const std::string& where) {
    const ReplayHeader& h = file_->header;
    if (h.hash_every == 0) return fail(where, ": hashes in a replay recorded without them");
    const std::uint64_t previous = file_->hashes.empty() ? h.start_tick : file_->hashes.back().tick;
    if (last < first || first <= previous || last > file_->last_tick) {
      return fail(where, ": hashes for ticks ", first, "..", last, " out of order");
    }
    const std::uint64_t expected = multiples_in(first, last, h.hash_every);
    const std::uint32_t count = in.u32();
    if (count != expected) return fail(where, ": ", count, " hashes where the range holds ", expected);
    if (count > in.remaining() / 8) return fail(where, ": hash count ", count, " overruns the chunk");
    std::uint64_t tick = (first + h.hash_every - 1) / h.hash_every * h.hash_every;
    for (std::uint32_t i = 0; i < count; ++i, tick += h.hash_every) file_->hashes.push_back({tick, in.u64()});
    if (!in.at_end()) return fail(where, ": unexpected bytes after the hashes");
    return {};
  }

  ReplayFile* file_;
  std::uint64_t chunks_ = 0;
  bool accept_gap_ = false;              ///< the next inputs chunk may start past the file's last tick
  bool need_start_snapshot_ = false;
  bool phases_may_follow_ = false;       ///< the last inputs chunk has had no phase hashes yet
  std::uint64_t last_inputs_first_ = 0;  ///< the first tick of the last inputs chunk
};

/// A replay's bytes, read a piece at a time: a span already in memory, or a file read chunk by
/// chunk, so that parsing never holds more of a file than its largest chunk.
class SpanSource {
 public:
  explicit SpanSource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  [[nodiscard]] std::uint64_t size() const { return bytes_.size(); }
  Result<std::span<const std::byte>> read(std::uint64_t offset, std::size_t size) {
    return bytes_.subspan(static_cast<std::size_t>(offset), size);
  }

 private:
  std::span<const std::byte> bytes_;
};

/// A chunk's header, its check verified.
struct ChunkHead {
  std::uint32_t type = 0;
  std::uint32_t length = 0;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::size_t bytes = 0;  ///< the header's own size
};

/// Reads a chunk header from the first bytes of `bytes` (up to k_max_chunk_header_bytes, or the
/// rest of the file). No value: the file ends inside the header, a cut rather than corruption.
inline Result<std::optional<ChunkHead>> read_chunk_head(std::span<const std::byte> bytes, std::uint64_t index,
                                                 std::uint64_t offset) {
  auto corrupt = [&] { return fail("chunk ", index, " at byte ", offset, " has a corrupt header (its check fails)"); };
  ByteReader head(bytes);
  ChunkHead h;
  h.type = head.u8();
  const std::uint64_t length = head.varint();
  h.first = head.varint();
  const std::uint64_t span = head.varint();
  const std::size_t checked = head.offset();
  const std::uint32_t header_check = head.u32();
  if (!head.ok()) {
    // Ran out of bytes while the file did: cut short. Otherwise a varint was malformed.
    if (bytes.size() < k_max_chunk_header_bytes && head.remaining() < k_chunk_header_check_bytes) {
      return std::optional<ChunkHead>{};
    }
    return corrupt();
  }
  if (header_check != static_cast<std::uint32_t>(xxh3_64(bytes.first(checked)) & 0xFFFFFFFFu)) return corrupt();
  if (h.type < 1 || h.type > static_cast<std::uint32_t>(ChunkType::phase_hashes)) {
    return fail("chunk ", index, " at byte ", offset, " has unknown type ", h.type);
  }
  if (h.first >= k_tick_limit || span >= k_tick_limit - h.first) {
    return fail("chunk ", index, " at byte ", offset, " claims impossible ticks (not below ", k_tick_limit, ")");
  }
  if (length > 0xFFFFFFFFu) return fail("chunk ", index, " at byte ", offset, " claims an impossible length of ", length, " bytes");
  h.length = static_cast<std::uint32_t>(length);
  h.last = h.first + span;
  h.bytes = head.offset();
  return std::optional<ChunkHead>{h};
}

inline void count_size(SizeBreakdown& sizes, ChunkType type, std::uint64_t total) {
  switch (type) {
    case ChunkType::header:
    case ChunkType::start_snapshot: sizes.header += total; break;
    case ChunkType::inputs: sizes.inputs += total; break;
    case ChunkType::hashes: sizes.hashes += total; break;
    case ChunkType::keyframe: sizes.keyframes += total; break;
    case ChunkType::end: sizes.end += total; break;
    case ChunkType::phase_hashes: sizes.phase_hashes += total; break;
  }
}

/// Where a walk over chunks stopped.
struct ChunkWalk {
  std::uint64_t offset = 0;  ///< the first byte not walked
  bool cut = false;          ///< the bytes end inside a chunk there
};

/// Walks the chunks of `source` from byte `offset`, numbering them from `index` on: checks each
/// chunk's framing, bound and checksum and hands it to `visit(type, head, payload, offset,
/// where)`, until the bytes end, a chunk is cut short, or `done()`. Offsets in messages are
/// counted from `base` (a segment's place in the whole recording).
template <class Source, class Visit, class Done>
Result<ChunkWalk> walk_chunks(Source& source, std::uint64_t offset, std::uint64_t base, std::uint64_t& index,
                              Visit visit, Done done) {
  const std::uint64_t size = source.size();
  for (; offset < size && !done(); ++index) {
    const std::uint64_t at = base + offset;
    const std::uint64_t remaining = size - offset;
    Result<std::span<const std::byte>> head_bytes =
        source.read(offset, static_cast<std::size_t>(std::min<std::uint64_t>(remaining, k_max_chunk_header_bytes)));
    if (!head_bytes) return head_bytes.error();
    Result<std::optional<ChunkHead>> chunk_head = read_chunk_head(head_bytes.value(), index, at);
    if (!chunk_head) return chunk_head.error();
    if (!chunk_head.value()) return ChunkWalk{offset, true};
    const ChunkHead chunk = *chunk_head.value();
    const auto type = static_cast<ChunkType>(chunk.type);
    const std::string where = "chunk " + std::to_string(index) + " (" + std::string(chunk_type_name(chunk.type)) +
                              ") at byte " + std::to_string(at);
    if (chunk.length > payload_bound(type)) {
      return fail(where, " claims an impossible length of ", chunk.length, " bytes (the bound is ",
                  payload_bound(type), ")");
    }
    const std::size_t total = chunk.bytes + chunk.length + k_chunk_checksum_bytes;
    if (remaining < total) return ChunkWalk{offset, true};
    Result<std::span<const std::byte>> whole = source.read(offset, total);
    if (!whole) return whole.error();
    const std::span<const std::byte> body = whole->first(chunk.bytes + chunk.length);
    ByteReader tail(whole->subspan(body.size()));
    if (static_cast<std::uint32_t>(xxh3_64(body) & 0xFFFFFFFFu) != tail.u32()) return fail(where, " fails its checksum");
    if (Status visited = visit(type, chunk, body.subspan(chunk.bytes), at, where); !visited) return visited.error();
    offset += total;
  }
  return ChunkWalk{offset, false};
}

}  // namespace detail
}  // namespace lockstep::replay
