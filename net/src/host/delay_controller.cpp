#include "lockstep/net/host/delay_controller.hpp"

#include <algorithm>
#include <cmath>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

std::optional<std::uint32_t> DelayController::needed(std::optional<double> slowest_rtt_ms) const {
  if (!slowest_rtt_ms) return std::nullopt;
  const double tick_ms = 1000.0 / std::max<std::uint32_t>(1, tick_rate_hz_);
  const double ticks = std::ceil(*slowest_rtt_ms / tick_ms + k_margin_ticks);
  const auto lockstep = static_cast<std::uint32_t>(std::clamp(ticks, 0.0, static_cast<double>(k_max_input_delay)));
  if (prediction_window_ == 0) return lockstep;
  return std::max(k_prediction_floor, lockstep > prediction_window_ ? lockstep - prediction_window_ : 0);
}

std::optional<std::uint32_t> DelayController::review(Instant now, std::optional<double> slowest_rtt_ms,
                                                     std::uint32_t current) {
  if (now < next_review_) return std::nullopt;
  next_review_ = now + k_review_every;
  const std::optional<std::uint32_t> want = needed(slowest_rtt_ms);
  if (!want || *want == current) {
    lower_reviews_ = 0;
    return std::nullopt;
  }
  if (*want < current) {
    // Lower only when a smaller delay has been enough for a while: a round trip's spike passes.
    lower_needed_ = lower_reviews_ == 0 ? *want : std::max(lower_needed_, *want);
    if (++lower_reviews_ < k_reviews_to_lower) return std::nullopt;
  }
  lower_reviews_ = 0;
  return *want < current ? lower_needed_ : *want;
}

}  // namespace lockstep::net
