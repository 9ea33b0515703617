#pragma once
/// Where a ReplayWriter's bytes go: a file (ReplayWriter::create with a path), or a live
/// broadcast's segment files (BroadcastSink). The writer hands over its bytes in pieces that are
/// each whole: the opening (preamble, header and any start snapshot), then groups of whole chunks.

#include <cstdint>
#include <limits>
#include <span>

#include "lockstep/engine/result.hpp"

namespace lockstep::replay {

/// What one piece of a replay holds.
struct WrittenChunks {
  bool opening = false;         ///< the preamble, the header and any start snapshot
  std::uint64_t first_tick = 0; ///< the first tick with inputs in it (the start tick for the opening)
  std::uint64_t last_tick = 0;  ///< the last tick with inputs in it
  bool keyframe = false;        ///< ends with the keyframe of last_tick (whole or as a difference)
  bool end = false;             ///< ends with the end record
  std::uint64_t end_hash = 0;   ///< with `end`: the hash the end record gives last_tick
};

class ReplaySink {
 public:
  virtual ~ReplaySink() = default;
  /// Takes `bytes` (what `what` says) all or nothing: a failure leaves none of them behind.
  virtual Status write(std::span<const std::byte> bytes, const WrittenChunks& what) = 0;
  /// The end record is written: makes the replay durable and releases what holds it.
  virtual Status close() = 0;
  /// The largest piece it takes: a writer whose next piece would be larger ends the replay there,
  /// properly, as it does at its size limit.
  [[nodiscard]] virtual std::uint64_t max_piece_bytes() const { return std::numeric_limits<std::uint64_t>::max(); }
};

}  // namespace lockstep::replay
