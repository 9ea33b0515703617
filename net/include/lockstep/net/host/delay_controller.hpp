#pragma once
/// The adaptive input delay's decisions: from the slowest player's round trip to the delay that
/// keeps every player from stalling. Raised at once; lowered only after a smaller one has been
/// enough for a while, so a round trip's spike passes without a change each way. Round trips in,
/// decisions out: no network, no clock (the host passes the time, and announces what it decides).

#include <cstdint>
#include <optional>

#include "lockstep/net/io/time.hpp"

namespace lockstep::net {

class DelayController {
 public:
  /// Reviews this often.
  static constexpr Duration k_review_every = std::chrono::milliseconds(250);
  /// A smaller delay is chosen only after this many reviews in a row found it enough.
  static constexpr std::uint32_t k_reviews_to_lower = 12;
  /// What a delay must cover beyond the round trip, in ticks: up to half a tick of send cadence at
  /// the peer and at the host, and the frame and scheduling granularity of both.
  static constexpr double k_margin_ticks = 1.0;

  /// With prediction (a window of W ticks), the input delay is the local delay: what the round trip
  /// calls for minus W, and never below this.
  static constexpr std::uint32_t k_prediction_floor = 1;

  explicit DelayController(std::uint32_t tick_rate_hz = 60, std::uint32_t prediction_window = 0)
      : tick_rate_hz_(tick_rate_hz), prediction_window_(prediction_window) {}

  /// The delay a round trip of `slowest_rtt_ms` (the slowest player's 95th percentile, so jitter
  /// counts) calls for: the round trip plus the margin, in whole ticks, at most k_max_input_delay;
  /// with prediction, W ticks fewer and at least k_prediction_floor.
  [[nodiscard]] std::optional<std::uint32_t> needed(std::optional<double> slowest_rtt_ms) const;

  /// Whether a review is due at `now` (every k_review_every): what it needs is worth working out.
  [[nodiscard]] bool due(Instant now) const { return now >= next_review_; }
  /// A review at `now`, when one is due: the delay to announce instead of `current`, or nothing.
  std::optional<std::uint32_t> review(Instant now, std::optional<double> slowest_rtt_ms, std::uint32_t current);

 private:
  std::uint32_t tick_rate_hz_;
  std::uint32_t prediction_window_;
  Instant next_review_{0};
  std::uint32_t lower_reviews_ = 0;  ///< reviews in a row that found a smaller delay enough
  std::uint32_t lower_needed_ = 0;   ///< the largest of what those reviews found
};

}  // namespace lockstep::net
