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

/// One player's inputs as runs, stored flat so that memory stays in proportion to the file: a
/// run costs 8 + input_bytes bytes here against 4 + input_bytes on disk. Run r holds input(r)
/// from first_tick(r) through the tick before the next run's first (the last run: through the
/// file's last tick).
class InputRuns {
 public:
  explicit InputRuns(std::uint32_t input_bytes = 1) : input_bytes_(input_bytes) {}

  void add(std::uint64_t first_tick, std::span<const std::byte> input) {
    if (first_ticks_.size() % k_block_runs == 0) {
      input_blocks_.emplace_back().reserve(k_block_runs * input_bytes_);
    }
    first_ticks_.push_back(first_tick);
    input_blocks_.back().insert(input_blocks_.back().end(), input.begin(), input.end());
  }
  [[nodiscard]] std::size_t size() const { return first_ticks_.size(); }
  [[nodiscard]] std::uint64_t first_tick(std::size_t run) const { return first_ticks_[run]; }
  [[nodiscard]] std::span<const std::byte> input(std::size_t run) const {
    return std::span<const std::byte>(input_blocks_[run / k_block_runs])
        .subspan(run % k_block_runs * input_bytes_, input_bytes_);
  }
  /// The run that holds `tick` (at or after the first run's first tick).
  [[nodiscard]] std::size_t find(std::uint64_t tick) const {
    return static_cast<std::size_t>(std::upper_bound(first_ticks_.begin(), first_ticks_.end(), tick) -
                                    first_ticks_.begin()) - 1;
  }

 private:
  // Fixed-size blocks and a deque rather than vectors that double: growing never holds two
  // copies, so the peak stays at the figure above.
  static constexpr std::size_t k_block_runs = 4096;
  std::uint32_t input_bytes_;
  std::deque<std::uint64_t> first_ticks_;
  std::vector<std::vector<std::byte>> input_blocks_;
};

struct TickHash {
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
};

struct Keyframe {
  std::uint64_t tick = 0;
  std::uint64_t offset = 0;         ///< byte offset of its chunk in the file
  std::vector<std::byte> snapshot;  ///< engine snapshot bytes
};

/// Bytes of the file by what they hold (chunk framing counted with its chunk).
struct SizeBreakdown {
  std::uint64_t header = 0;   ///< preamble, header and start snapshot
  std::uint64_t inputs = 0;
  std::uint64_t hashes = 0;
  std::uint64_t keyframes = 0;
  std::uint64_t end = 0;
  std::uint64_t truncated = 0;  ///< bytes of an incomplete last chunk
  [[nodiscard]] std::uint64_t total() const {
    return header + inputs + hashes + keyframes + end + truncated;
  }
};

struct ReplayFile {
  ReplayHeader header;
  std::vector<std::byte> start_snapshot;        ///< present when header.start_tick > 0
  std::vector<InputRuns> inputs;                ///< per player; runs cover (start_tick, last_tick]
  std::uint64_t last_tick = 0;                  ///< the last tick with every player's input
  std::deque<TickHash> hashes;                  ///< ascending (a deque: growing never copies)
  std::vector<Keyframe> keyframes;              ///< ascending
  std::optional<TickHash> end;                  ///< the end record, if the recording finished
  bool truncated = false;                       ///< the file ends inside a chunk
  std::uint64_t truncated_at_byte = 0;          ///< where the incomplete chunk begins
  SizeBreakdown sizes;

  /// The recorded hash of `tick`, if any (the end record included).
  [[nodiscard]] std::optional<std::uint64_t> hash_at(std::uint64_t tick) const;
  /// Ticks with inputs: last_tick − start_tick.
  [[nodiscard]] std::uint64_t tick_count() const { return last_tick - header.start_tick; }
};

/// Text taken from a file, made safe to print: every byte outside printable ASCII (terminal
/// escape sequences, newlines that would fake another line) becomes `\xNN`.
std::string printable(std::string_view text);

/// Parses a whole replay file from memory. Errors are one line each, e.g.
/// "not a lockstep replay file", "replay format version 7 is newer than this build's 1",
/// "chunk 5 (inputs) at byte 1234 fails its checksum".
Result<ReplayFile> parse_replay(std::span<const std::byte> bytes);

/// Reads and parses a file; the message names the path when it cannot be read.
Result<ReplayFile> read_replay_file(const std::string& path);

}  // namespace lockstep::replay
