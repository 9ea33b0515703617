#pragma once
// How a viewer of a live broadcast keeps its distance from live, whatever fetches the segments:
// `lockstep spectate URL` (BroadcastSpectator) and the static page's `?live=URL` (the web
// engine, tools/web/lockstep_web_live.cpp) pace their playing with it and print the same line.

#include <cstdint>
#include <string>

namespace lockstep::cli::detail {

/// How far behind live a viewer plays unless told otherwise, in seconds: a segment's second, a
/// cache's second on the manifest, and room for a slow fetch.
inline constexpr double k_default_behind_s = 4.0;
/// The most --behind takes, in seconds.
inline constexpr double k_max_behind_s = 3600.0;

/// The tick a viewer should be at: the tick rate from where playing began (or last resumed),
/// never further than twice `behind` from live (past that it catches up, and paces from there),
/// and never past what has arrived (pacing resumes from there). Running dry counts a stall once
/// ticks have arrived since it last ran dry (waiting for a broadcast to begin is none).
/// Times are seconds on any steady clock (the command's, a page's performance.now()).
class BroadcastPace {
 public:
  /// Playing starts at `start_tick` once live is `behind_ticks` ahead (a start nearer live than
  /// that waits).
  BroadcastPace(std::uint32_t tick_rate_hz, std::uint64_t behind_ticks, std::uint64_t start_tick, std::uint64_t live,
                double now_s);

  /// The tick to be at `now_s`, with live at `live` and the ticks up to `arrived` here.
  std::uint64_t target(double now_s, std::uint64_t live, std::uint64_t arrived, bool ended);

  /// Times the viewer ran out of ticks to play.
  [[nodiscard]] std::uint64_t stalls() const { return stalls_; }

 private:
  void re_anchor(double now_s, std::uint64_t tick) {
    anchor_s_ = now_s;
    anchor_tick_ = tick;
  }

  std::uint32_t rate_;
  std::uint64_t behind_ticks_;
  double anchor_s_;
  std::uint64_t anchor_tick_;
  std::uint64_t stalls_ = 0;
  std::uint64_t dry_at_;  ///< the last tick there was when it last ran dry (at first: the start)
};

/// What a viewer of a broadcast has fetched, for its line.
struct BroadcastFetched {
  std::uint64_t segments = 0;
  std::uint64_t refetched = 0;  ///< segments fetched a second time past any cache
  std::uint64_t bytes = 0;
};

/// The line a viewer prints once a second: where it is, how far behind live, what it fetched.
std::string broadcast_progress_line(std::uint64_t tick, std::uint64_t live, std::uint32_t tick_rate_hz,
                                    const BroadcastFetched& fetched, std::uint64_t stalls);

}  // namespace lockstep::cli::detail
