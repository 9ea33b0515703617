#pragma once
/// A replay file, parsed and validated, independent of the simulation type. Parsing checks every
/// chunk's bounds, checksum and tick order; a file that ends inside a chunk (a recording that was
/// killed) yields every complete chunk and says where it was cut.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/replay/format.hpp"
#include "lockstep/replay/keyframe_codec.hpp"

namespace lockstep::replay {

/// Everything that built the initial state, and how the file was recorded.
struct ReplayHeader {
  std::string engine_version;
  std::string simulation;              ///< the simulation type's k_name
  std::uint64_t compatibility_id = 0;  ///< the simulation's compatibility_id() when recorded
  std::string build;                   ///< compiler and flags of the recording build (diagnosis)
  std::uint64_t seed = 0;
  std::uint32_t players = 0;
  std::uint32_t input_bytes = 0;       ///< encoded size of one player's input
  std::string input_layout;
  std::uint32_t hash_every = 1;        ///< 0: only the final hash
  std::uint32_t keyframe_every = 0;    ///< 0: no keyframes
  std::uint64_t start_tick = 0;        ///< > 0: S0 is the start snapshot, not built from config
  std::uint64_t start_hash = 0;        ///< hash of the state at start_tick
  std::vector<std::byte> config;       ///< canonical bytes of the simulation's Config
};

/// One player's inputs as runs, stored so that memory stays in proportion to the file: a run
/// costs 4 + input_bytes bytes here, against at least 1 + input_bytes on disk (2.5 times that
/// for a 1-byte input, twice for the built-in world's 2-byte input). Run r holds input(r) from first_tick(r) through
/// the tick before the next run's first (the last run: through the file's last tick).
class InputRuns {
 public:
  explicit InputRuns(std::uint32_t input_bytes = 1) : input_bytes_(input_bytes) {}

  /// Appends a run; first ticks ascend, and a run is at most k_max_ticks_per_chunk long.
  void add(std::uint64_t first_tick, std::span<const std::byte> input) {
    if (size_ % k_block_runs == 0) {
      blocks_.emplace_back().base_tick = first_tick;
    }
    Block& block = blocks_.back();
    block.offsets.push_back(static_cast<std::uint32_t>(first_tick - block.base_tick));
    block.inputs.insert(block.inputs.end(), input.begin(), input.end());
    ++size_;
  }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::uint64_t first_tick(std::size_t run) const {
    const Block& block = blocks_[run / k_block_runs];
    return block.base_tick + block.offsets[run % k_block_runs];
  }
  [[nodiscard]] std::span<const std::byte> input(std::size_t run) const {
    return std::span<const std::byte>(blocks_[run / k_block_runs].inputs)
        .subspan(run % k_block_runs * input_bytes_, input_bytes_);
  }
  /// The run that holds `tick` (at or after the first run's first tick).
  [[nodiscard]] std::size_t find(std::uint64_t tick) const {
    const auto block = std::upper_bound(blocks_.begin(), blocks_.end(), tick,
                                        [](std::uint64_t t, const Block& b) { return t < b.base_tick; }) - 1;
    const auto offset = std::upper_bound(block->offsets.begin(), block->offsets.end(), tick - block->base_tick,
                                         [](std::uint64_t t, std::uint32_t o) { return t < o; }) - 1;
    return static_cast<std::size_t>(block - blocks_.begin()) * k_block_runs +
           static_cast<std::size_t>(offset - block->offsets.begin());
  }

 private:
  // Runs in blocks of a fixed count, so that growing copies one block at most, never the whole
  // list; a run's first tick is a 32-bit offset from its block's first (a block spans at most
  // k_block_runs runs of at most k_max_ticks_per_chunk = 2^20 ticks each, under 2^32).
  static constexpr std::size_t k_block_runs = 4096;
  static_assert((k_block_runs - 1) * k_max_ticks_per_chunk < (std::uint64_t{1} << 32));
  struct Block {
    std::uint64_t base_tick = 0;
    std::vector<std::uint32_t> offsets;
    std::vector<std::byte> inputs;
  };
  std::uint32_t input_bytes_;
  std::size_t size_ = 0;
  std::vector<Block> blocks_;
};

struct TickHash {
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
};

/// A keyframe as the file stores it: read its snapshot with keyframe_snapshot().
struct Keyframe {
  std::uint64_t tick = 0;
  std::uint64_t offset = 0;             ///< byte offset of its chunk in the file
  KeyframeEncoding encoding = KeyframeEncoding::whole;
  std::uint32_t snapshot_bytes = 0;     ///< the snapshot's size, decoded
  std::vector<std::byte> data;          ///< the snapshot, or its difference from the first keyframe
};

/// Bytes of the file by what they hold (chunk framing counted with its chunk).
struct SizeBreakdown {
  std::uint64_t header = 0;   ///< preamble, header and start snapshot
  std::uint64_t inputs = 0;
  std::uint64_t hashes = 0;
  std::uint64_t keyframes = 0;
  std::uint64_t end = 0;
  std::uint64_t phase_hashes = 0;
  std::uint64_t truncated = 0;  ///< bytes of an incomplete last chunk
  [[nodiscard]] std::uint64_t total() const {
    return header + inputs + hashes + keyframes + end + phase_hashes + truncated;
  }
};

/// The hash of one checkpoint inside the step of a recorded tick (engine/step_probe.hpp).
struct PhaseCheckpoint {
  std::uint64_t tick = 0;
  std::uint32_t substep = 0;
  std::uint32_t phase = 0;  ///< an index into ReplayFile::phase_names
  std::uint64_t hash = 0;
};

struct ReplayFile {
  ReplayHeader header;
  std::vector<std::byte> start_snapshot;        ///< present when header.start_tick > 0
  std::vector<InputRuns> inputs;                ///< per player; runs cover (start_tick, last_tick]
  std::uint64_t last_tick = 0;                  ///< the last tick with every player's input
  std::deque<TickHash> hashes;                  ///< ascending (a deque: growing never copies)
  std::vector<Keyframe> keyframes;              ///< ascending
  std::optional<TickHash> end;                  ///< the end record, if the recording finished
  std::vector<std::string> phase_names;         ///< the names phase checkpoints index
  std::deque<PhaseCheckpoint> phase_hashes;     ///< by tick, each tick's in the step's order
  bool truncated = false;                       ///< the file ends inside a chunk
  std::uint64_t truncated_at_byte = 0;          ///< where the incomplete chunk begins
  SizeBreakdown sizes;

  /// The recorded hash of `tick`, if any (the end record included).
  [[nodiscard]] std::optional<std::uint64_t> hash_at(std::uint64_t tick) const;
  /// The checkpoints of `tick`'s step, if the file holds them (none otherwise).
  [[nodiscard]] std::vector<PhaseCheckpoint> phases_at(std::uint64_t tick) const;
  /// The ticks whose checkpoints the file holds, ascending.
  [[nodiscard]] std::vector<std::uint64_t> phase_ticks() const;
  /// Ticks with inputs: last_tick − start_tick.
  [[nodiscard]] std::uint64_t tick_count() const { return last_tick - header.start_tick; }
};

/// The engine snapshot of keyframe `index` of the file, decoded (at most the size of the file's
/// first keyframe, which the file holds whole). Fails on a difference that does not decode.
Result<std::vector<std::byte>> keyframe_snapshot(const ReplayFile& file, std::size_t index);

/// Text taken from a file, made safe to print: every byte outside printable ASCII (terminal
/// escape sequences, newlines that would fake another line) becomes `\xNN`.
std::string printable(std::string_view text);

/// Parses a whole replay file from memory. Errors are one line each, e.g.
/// "not a lockstep replay file", "replay format version 7 is newer than this build's 1",
/// "chunk 5 (inputs) at byte 1234 fails its checksum". Besides every bound and order rule of
/// FORMAT.md, refuses an empty start snapshot and an end record whose hash contradicts the one
/// the file holds for its tick.
Result<ReplayFile> parse_replay(std::span<const std::byte> bytes);

/// Reads and parses a file; the message names the path when it cannot be read.
Result<ReplayFile> read_replay_file(const std::string& path);

}  // namespace lockstep::replay
