#pragma once
/// Round-trip time from echoed 16-bit millisecond timestamps (the Timing of updates and relays),
/// with the median of the last samples.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>

#include "lockstep/net/io/time.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

class RttMeter {
 public:
  static constexpr std::size_t k_samples = 64;

  /// A Timing from the other side arrived at `now`.
  void on_timing(const Timing& t, Instant now) {
    echo_ms_ = t.sent_ms;
    echo_received_ = now;
    have_echo_ = true;
    if (t.echo_ms == 0 && t.echo_held_ms == 0) return;  // it had nothing of ours to echo yet
    const auto elapsed = static_cast<std::uint16_t>(ms(now) - t.echo_ms);
    if (elapsed < t.echo_held_ms || elapsed - t.echo_held_ms > 30'000) return;
    samples_[next_ % k_samples] = static_cast<std::uint16_t>(elapsed - t.echo_held_ms);
    ++next_;
  }

  /// The Timing to send at `now`.
  [[nodiscard]] Timing outgoing(Instant now) const {
    Timing t;
    t.sent_ms = ms(now);
    if (have_echo_) {
      t.echo_ms = echo_ms_;
      t.echo_held_ms = static_cast<std::uint16_t>(std::min<std::int64_t>((now - echo_received_).count() / 1000, 0xFFFF));
    }
    return t;
  }

  /// Whether the `sends`-th datagram to the other side carries a Timing: every one of the first
  /// 24 (so that a round trip is known within a few hundred milliseconds), then every eighth.
  [[nodiscard]] static bool timing_due(std::uint32_t sends) { return sends < 24 || sends % 8 == 0; }

  /// The median of the last samples in ms, or nothing before the first.
  [[nodiscard]] std::optional<double> median_ms() const {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(next_, k_samples));
    if (n == 0) return std::nullopt;
    std::array<std::uint16_t, k_samples> sorted = samples_;
    std::sort(sorted.begin(), sorted.begin() + static_cast<long>(n));
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  }

  /// The `q`-quantile (0 to 1, nearest rank) of the last samples in ms, or nothing before the first.
  [[nodiscard]] std::optional<double> percentile_ms(double q) const {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(next_, k_samples));
    if (n == 0) return std::nullopt;
    std::array<std::uint16_t, k_samples> sorted = samples_;
    std::sort(sorted.begin(), sorted.begin() + static_cast<long>(n));
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
    return sorted[std::clamp<std::size_t>(rank, 1, n) - 1];
  }

 private:
  static std::uint16_t ms(Instant now) { return static_cast<std::uint16_t>(now.count() / 1000); }
  std::uint16_t echo_ms_ = 0;
  Instant echo_received_{0};
  bool have_echo_ = false;
  std::array<std::uint16_t, k_samples> samples_{};
  std::uint64_t next_ = 0;
};

}  // namespace lockstep::net
