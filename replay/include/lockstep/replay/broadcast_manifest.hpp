#pragma once
/// A live broadcast's manifest: which segment files a broadcast directory holds so far (the
/// latest of them; the rest are named by number), and whether it has ended. BroadcastSink
/// writes it, replaced whole and atomically after every segment; `lockstep spectate URL` and the
/// static page read it (replay/FORMAT.md, "Broadcast"). Everything read is untrusted: parsing
/// bounds and checks every field before anything is built from it.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {

inline constexpr std::string_view k_broadcast_manifest_name = "manifest.json";
inline constexpr std::uint32_t k_broadcast_version = 1;
/// A manifest is at most this big (it lists at most k_broadcast_window segments).
inline constexpr std::size_t k_max_manifest_bytes = 64 * 1024;
/// The latest segments a manifest lists.
inline constexpr std::size_t k_broadcast_window = 128;
/// A segment file is at most this big (a keyframe of a large world and its ticks); a broadcast
/// whose segment would be bigger ends there, properly.
inline constexpr std::uint64_t k_max_segment_bytes = 64ull << 20;
/// Segment numbers (segment 0 is the opening: preamble, header and any start snapshot).
inline constexpr std::uint64_t k_max_segment_number = (1ull << 40) - 1;

/// One segment the manifest lists.
struct BroadcastSegment {
  std::uint64_t number = 0;      ///< 1, 2, …: the file `<id>-<number>.lss`
  std::uint64_t first_tick = 0;  ///< the first tick with inputs in it (a keyframe or the end alone: its tick)
  std::uint64_t last_tick = 0;   ///< the last tick with inputs in it
  bool keyframe = false;         ///< ends with a whole keyframe of last_tick: a place to start
  std::uint64_t bytes = 0;       ///< the file's size
};

struct BroadcastManifest {
  std::string id;                 ///< 16 hex digits, new for every broadcast: segments of another are never mixed in
  std::uint32_t tick_rate_hz = 0;
  std::uint64_t start_tick = 0;     ///< the recording's start tick
  std::uint64_t opening_bytes = 0;  ///< segment 0's size
  std::vector<BroadcastSegment> segments;  ///< the latest, ascending and contiguous
  std::optional<TickHash> end;    ///< the last tick and its hash, once the broadcast has ended

  /// The file name of segment `number` (0: the opening).
  [[nodiscard]] std::string segment_name(std::uint64_t number) const;
  /// The last tick published (the opening's start tick when no segment is listed yet).
  [[nodiscard]] std::uint64_t live_tick() const;
  /// The entry of segment `number`, if the manifest lists it.
  [[nodiscard]] const BroadcastSegment* listed(std::uint64_t number) const;
  /// Where a viewer starts: the latest listed keyframe segment that ends at or before `tick`
  /// (or, failing that, the earliest listed one), or none — play from the opening — when the
  /// manifest lists no keyframe.
  [[nodiscard]] std::optional<BroadcastSegment> keyframe_at_or_before(std::uint64_t tick) const;
  /// Whether a viewer whose next segment is `next` has every segment (the end is in the last).
  [[nodiscard]] bool finished_before(std::uint64_t next) const {
    return end.has_value() && !segments.empty() && next > segments.back().number;
  }
};

/// The manifest as JSON, as BroadcastSink writes it.
std::string encode_manifest(const BroadcastManifest& manifest);

/// Parses a manifest fetched from anywhere: at most k_max_manifest_bytes, the version this build
/// reads, an id of 16 hex digits, a tick rate lockstep runs, at most k_broadcast_window segments,
/// ascending and contiguous, each within k_max_segment_bytes and with ticks in order. One-line
/// errors ("the broadcast's manifest is not JSON", "… lists segment 7 after segment 9").
Result<BroadcastManifest> parse_manifest(std::span<const std::byte> bytes);

}  // namespace lockstep::replay
