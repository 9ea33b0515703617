#include "lockstep/net/host/clock_phase.hpp"

#include <algorithm>
#include <cmath>

namespace lockstep::net {

void ClockPhases::observe(Slot slot, std::uint64_t held_through, Instant now, double rtt_ms) {
  if (slot >= slots_.size() || held_through == 0) return;
  const double host_ticks = static_cast<double>((now - start_).count()) / tick_us_;
  const double sent_ago = rtt_ms * 500.0 / tick_us_;  // half the round trip, in ticks
  const double offset = static_cast<double>(held_through) + sent_ago - host_ticks;
  PlayerClock& s = slots_[slot];
  s.offsets[s.count % k_observations] = offset;
  ++s.count;
  // The median of what the ring holds, found in a copy: observe() runs once per update, lead() once
  // per message sent, and the ring is small.
  std::array<double, k_observations> sorted = s.offsets;
  const std::size_t held = std::min(s.count, k_observations);
  const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(held / 2);
  std::nth_element(sorted.begin(), middle, sorted.begin() + static_cast<std::ptrdiff_t>(held));
  s.offset = *middle;
  s.seen = now;
}

std::int8_t ClockPhases::lead(Slot slot, Instant now) const {
  if (slot >= slots_.size() || !slots_[slot].offset || now - slots_[slot].seen > k_stale_after) return 0;
  double slowest = *slots_[slot].offset;
  for (const PlayerClock& s : slots_) {
    if (s.offset && now - s.seen <= k_stale_after) slowest = std::min(slowest, *s.offset);
  }
  return static_cast<std::int8_t>(std::clamp(std::floor(*slots_[slot].offset - slowest), 0.0, 127.0));
}

}  // namespace lockstep::net
