#include "lockstep/net/session/session_pacing.hpp"

#include <algorithm>
#include <chrono>

namespace lockstep::net {

void SessionPacing::start_clock(std::uint32_t tick_rate_hz) { clock_.emplace(tick_rate_hz, 8); }

std::uint32_t SessionPacing::advance(Instant start, Instant now, std::uint64_t end_tick) {
  if (!started_) {
    started_ = true;
    last_frame_ = start;
  }
  const std::uint32_t ticks = clock_->advance(now - last_frame_).ticks;
  last_frame_ = now;
  clock_ticks_ = std::min(clock_ticks_ + ticks, end_tick);
  clock_count_ += ticks;
  return ticks;
}

std::optional<Instant> SessionPacing::next_tick_at() const {
  if (!started_ || !clock_) return std::nullopt;
  return last_frame_ + std::chrono::ceil<Instant>(clock_->tick_length() - clock_->leftover());
}

void SessionPacing::pace(Instant start, Instant now, const Frame& frame) {
  const std::uint32_t ticks = advance(start, now, frame.end_tick);
  due_ = std::min(due_ + (frame.predicting ? time_sync(ticks, now, frame) : ticks), k_max_due);
  if (!frame.player) {
    behind_ = std::max(behind_, clock_ticks_ > frame.stepped ? clock_ticks_ - frame.stepped : 0);
    return;
  }
  if (frame.predicting) {
    // At the window's edge: W ticks past the confirmed one, counting the confirmed ticks in hand
    // that this frame steps next.
    const std::uint64_t next = frame.present + 1;
    const std::uint64_t reach = std::max(frame.stepped, std::min(frame.known_through, frame.present));
    if (due_ > 0 && frame.given_through >= next && next <= frame.end_tick && frame.present - reach >= frame.window &&
        next > frame.known_through) {
      stall_on(next);
    }
    return;
  }
  // Waiting for an input of its own that it has yet to give (input delay 0) is no stall.
  const std::uint64_t next = frame.stepped + 1;
  if (!frame.catching_up && due_ > 0 && frame.given_through >= next && frame.stepped < frame.end_tick &&
      next > frame.known_through) {
    stall_on(next);
  }
}

std::uint64_t SessionPacing::time_sync(std::uint64_t ticks, Instant now, const Frame& frame) {
  if (frame.lead >= 1 && now >= sync_hold_until_) {
    ++sync_debt_;
    const auto rtt = std::chrono::microseconds(static_cast<std::int64_t>(frame.rtt_ms.value_or(0.0) * 1000.0));
    sync_hold_until_ = now + rtt + 16 * Duration(1'000'000 / frame.tick_rate_hz);
  }
  const std::uint64_t waited = std::min(ticks, sync_debt_);
  sync_debt_ -= waited;
  return ticks - waited;
}

void SessionPacing::stall_on(std::uint64_t tick) {
  if (stalled_on_ != tick) {
    ++stalls_;
    stalled_on_ = tick;
  }
  due_ = 0;
}

}  // namespace lockstep::net
