#pragma once
/// A replay read a segment at a time, as a live broadcast arrives (BroadcastSink): the opening
/// first, then segments of whole chunks, each checked and parsed as a file's chunks are (same
/// bounds, checksums and order rules). A viewer may also start at a keyframe: the stream then
/// begins as a recording that starts at that tick would. Implemented beside parse_replay
/// (src/replay_file.cpp), whose chunk parser it shares.

#include <memory>
#include <span>

#include "lockstep/engine/result.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {

class ReplayStream {
 public:
  /// From the opening (segment 0): the preamble, the header and any start snapshot, whole, and
  /// nothing else.
  static Result<ReplayStream> open(std::span<const std::byte> opening);
  /// From the opening and a segment that ends with a whole keyframe: the stream starts at the
  /// keyframe's tick, with the keyframe as its start snapshot and the hash the segment records
  /// for that tick as its start hash (the caller restores it and checks that hash).
  static Result<ReplayStream> open_at_keyframe(std::span<const std::byte> opening, std::span<const std::byte> segment);

  ReplayStream(ReplayStream&&) noexcept;
  ReplayStream& operator=(ReplayStream&&) noexcept;
  ~ReplayStream();

  /// Whether `segment` is whole chunks, each with a sound header and checksum; changes nothing.
  /// A segment that fails here was damaged on its way (fetch it again).
  [[nodiscard]] Status check(std::span<const std::byte> segment) const;
  /// Adds the next segment: checked first (a segment that fails its checks changes nothing),
  /// then parsed onto file(); a segment that breaks the format's rules fails the stream (every
  /// later append fails too). The stream holds at most k_max_file_bytes in all, and keeps its
  /// keyframes' ticks but not their data (a stream plays forward; it does not seek).
  Status append(std::span<const std::byte> segment);

  /// The replay so far: its inputs end at file().last_tick; file().end once it has ended.
  [[nodiscard]] const ReplayFile& file() const;

 private:
  ReplayStream();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lockstep::replay
