#include "lockstep/cli/detail/broadcast_pace.hpp"

#include <algorithm>
#include <cstdio>

namespace lockstep::cli::detail {

BroadcastPace::BroadcastPace(std::uint32_t tick_rate_hz, std::uint64_t behind_ticks, std::uint64_t start_tick,
                             std::uint64_t live, double now_s)
    : rate_(tick_rate_hz), behind_ticks_(behind_ticks), anchor_s_(now_s), anchor_tick_(start_tick), dry_at_(start_tick) {
  const std::uint64_t ahead = live > start_tick ? live - start_tick : 0;
  if (ahead < behind_ticks_) anchor_s_ += static_cast<double>(behind_ticks_ - ahead) / rate_;
}

std::uint64_t BroadcastPace::target(double now_s, std::uint64_t live, std::uint64_t arrived, bool ended) {
  const double elapsed = std::max(0.0, now_s - anchor_s_);
  std::uint64_t tick = anchor_tick_ + static_cast<std::uint64_t>(elapsed * rate_);
  if (live > 2 * behind_ticks_ && tick < live - 2 * behind_ticks_) re_anchor(now_s, tick = live - 2 * behind_ticks_);
  if (tick > arrived) {
    if (arrived > dry_at_ && !ended) ++stalls_;
    dry_at_ = arrived;
    re_anchor(now_s, tick = arrived);
  }
  return tick;
}

std::string broadcast_progress_line(std::uint64_t tick, std::uint64_t live, std::uint32_t tick_rate_hz,
                                    const BroadcastFetched& fetched, std::uint64_t stalls) {
  char behind[32];
  std::snprintf(behind, sizeof behind, "%.1f", static_cast<double>(live > tick ? live - tick : 0) / tick_rate_hz);
  return "broadcast: tick " + std::to_string(tick) + ", live " + std::to_string(live) + " (" + behind +
         " s behind), segments " + std::to_string(fetched.segments) + " (" + std::to_string(fetched.refetched) +
         " fetched again), " + std::to_string(fetched.bytes) + " bytes, stalls " + std::to_string(stalls);
}

}  // namespace lockstep::cli::detail
