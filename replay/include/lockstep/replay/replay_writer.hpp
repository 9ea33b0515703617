#pragma once
/// Writes a replay chunk by chunk, untyped (inputs arrive as bytes), to a file or to another sink
/// (a live broadcast's segments). Every group of chunks is built in memory and handed over in one
/// piece — to a file, with one write(2) — so a process killed at any moment leaves every chunk it
/// completed intact, and at most the ticks since the last chunk are lost. Recorder<S> wraps this
/// for a simulation type.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/engine/step_probe.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "lockstep/replay/replay_sink.hpp"

namespace lockstep::replay {

class ReplayWriter {
 public:
  /// Creates (or truncates) `path` and writes the preamble, the header and, when the header's
  /// start_tick is not 0, the start snapshot. The file never grows past `max_file_bytes` (the
  /// readers' bound by default, so every file written is one a reader takes): a chunk that would
  /// cross it ends the recording instead, properly, at the last tick written (see reached_limit).
  static Result<ReplayWriter> create(const std::string& path, const ReplayHeader& header,
                                     std::span<const std::byte> start_snapshot,
                                     std::uint64_t max_file_bytes = k_max_file_bytes, bool whole_keyframes = false);
  /// The same, into `sink`. With `whole_keyframes` every keyframe is stored whole, so that each is
  /// a starting point by itself (a broadcast's viewers start from the latest); otherwise each
  /// keyframe after the first is stored as its difference from the first when that is smaller.
  static Result<ReplayWriter> create(std::unique_ptr<ReplaySink> sink, const ReplayHeader& header,
                                     std::span<const std::byte> start_snapshot,
                                     std::uint64_t max_file_bytes = k_max_file_bytes, bool whole_keyframes = false);

  /// Destroying a writer closes the file without an end record (as a crash would): call
  /// finish() first.
  ReplayWriter(ReplayWriter&&) noexcept = default;
  ReplayWriter& operator=(ReplayWriter&&) noexcept = default;
  ~ReplayWriter() = default;

  /// Adds tick `tick` (the next one): every player's input, `players × input_bytes` bytes in
  /// slot order, and the state hash after it, and the hashes of the checkpoints inside its step
  /// when it has them (each naming its phase by an index into `phase_names`). The hash is kept
  /// when the tick is a multiple of hash_every. Completes and writes a chunk every
  /// k_ticks_per_chunk ticks (except on a tick that is a multiple of the header's keyframe_every,
  /// whose keyframe goes out with them: add_keyframe follows).
  Status add_tick(std::uint64_t tick, std::span<const std::byte> inputs, std::uint64_t hash,
                  std::span<const std::string> phase_names = {}, std::span<const PhaseHash> phases = {});

  /// Writes a keyframe for `tick` (the last tick added), with the pending ticks, in one piece.
  Status add_keyframe(std::uint64_t tick, std::span<const std::byte> snapshot);

  /// Writes the pending ticks as complete chunks now.
  Status flush();

  /// Flushes, writes the end record (last tick and its hash), syncs and closes (ReplaySink::close).
  Status finish();

  /// Whether the file reached its size limit and was ended there: the ticks added since are
  /// not in it (add_tick and add_keyframe then do nothing and succeed).
  [[nodiscard]] bool reached_limit() const { return reached_limit_; }
  /// The last tick the file holds.
  [[nodiscard]] std::uint64_t written_tick() const { return written_tick_; }

  [[nodiscard]] std::uint64_t last_tick() const { return last_tick_; }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_; }

 private:
  ReplayWriter(std::unique_ptr<ReplaySink> sink, const ReplayHeader& header, std::uint64_t max_file_bytes,
               bool whole_keyframes);
  /// One chunk to write: its type, its ticks and its payload.
  struct ChunkOut {
    ChunkType type;
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    std::span<const std::byte> payload;
  };
  /// Appends `chunk`, framed, to the piece being built (chunk_).
  void encode_chunk(const ChunkOut& chunk);
  /// Hands the piece being built to the sink in one piece, so that a process killed while
  /// recording leaves all of it or none: a chunk of ticks' inputs is never on disk without the
  /// hashes that verify them.
  Status emit(const WrittenChunks& what);
  /// Writes the pending ticks' chunks, and after them `keyframe` (a keyframe chunk's payload of
  /// the last tick) when it is not empty, in one piece.
  Status write_pending(std::span<const std::byte> keyframe);
  /// Whether chunks with these payload sizes, and then the end record, still fit the limit.
  [[nodiscard]] bool fits(std::size_t payload_a, std::size_t payload_b = 0, std::size_t payload_c = 0,
                          std::size_t payload_d = 0) const;
  /// Checks and keeps the checkpoints of `tick` (being added) until its chunk is written.
  Status keep_phase_hashes(std::uint64_t tick, std::span<const std::string> names, std::span<const PhaseHash> hashes);
  /// The phase hash chunk of the pending ticks' checkpoints (empty when there are none).
  [[nodiscard]] std::vector<std::byte> phase_hashes_payload(std::uint64_t first) const;
  /// Ends the file at the last tick written, because the next chunk would not fit.
  Status end_at_limit();
  Status write_end(std::uint64_t tick, std::uint64_t hash);

  std::unique_ptr<ReplaySink> sink_;  ///< null once closed
  std::uint32_t players_ = 0;
  std::uint32_t input_bytes_ = 0;
  std::uint32_t hash_every_ = 1;
  std::uint32_t keyframe_every_ = 0;
  bool whole_keyframes_ = false;
  std::uint64_t max_file_bytes_ = k_max_file_bytes;
  bool reached_limit_ = false;
  std::uint64_t last_tick_ = 0;
  std::uint64_t last_hash_ = 0;
  std::uint64_t written_tick_ = 0;           ///< the last tick whose chunks are in the file
  std::uint64_t written_hash_ = 0;
  std::uint64_t pending_first_ = 0;          ///< first tick not yet written
  std::vector<std::byte> pending_inputs_;    ///< ticks [pending_first_, last_tick_], tick-major
  std::vector<std::uint64_t> pending_hashes_;
  /// Checkpoints of pending ticks, and the names they index (as the recorder's run named them).
  struct PendingPhases {
    std::uint64_t tick = 0;
    std::vector<PhaseHash> hashes;
  };
  std::vector<PendingPhases> pending_phases_;
  std::vector<std::string> phase_names_;
  std::vector<std::byte> chunk_;             ///< reused buffer
  std::vector<std::byte> keyframe_;          ///< reused buffer: a keyframe's payload
  std::vector<std::byte> first_keyframe_;    ///< the first keyframe's snapshot, which later ones are stored against
  std::uint64_t bytes_written_ = 0;
};

/// Encodes a header chunk's payload (shared with tests that craft files).
std::vector<std::byte> encode_header(const ReplayHeader& header);

}  // namespace lockstep::replay
