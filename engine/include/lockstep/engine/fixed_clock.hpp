#pragma once
/// Turns variable frame times into whole fixed ticks (the accumulator of "Fix Your Timestep"),
/// with integer time so nothing drifts over hours, and a max-steps clamp against the spiral of
/// death. The clock never reads a clock itself: callers pass the frame time they measured.

#include <chrono>
#include <cstdint>

#include "lockstep/engine/vec2.hpp"

namespace lockstep {

/// What one `FixedClock::advance` call asks the caller to do.
struct ClockAdvance {
  std::uint32_t ticks = 0;               ///< whole fixed ticks to step now
  std::chrono::nanoseconds dropped{0};   ///< time thrown away by the clamp (0 unless clamped)
  bool clamped = false;                  ///< true when more than max_steps ticks were due
};

/// Accumulates frame time and hands out whole ticks of 1/tick_rate seconds.
///
/// Time is kept as an integer count of (nanoseconds × tick rate), in which one tick is exactly
/// 10^9 units, so the number of ticks due is floor(total elapsed × rate) with no rounding error
/// however long the clock runs (until 2^63 units: over 4 years at 60 Hz).
class FixedClock {
 public:
  /// `tick_rate_hz` ≥ 1; `max_steps` ≥ 1 ticks per advance before the clamp drops time.
  FixedClock(std::uint32_t tick_rate_hz, std::uint32_t max_steps);

  /// Adds one frame's measured time (negative counts as zero) and returns the ticks now due.
  /// When more than max_steps are due, max_steps are returned, the excess whole ticks are dropped
  /// and reported, and the leftover fraction of a tick is kept, so it stays in [0, dt).
  ClockAdvance advance(std::chrono::nanoseconds frame);

  /// Leftover time not yet turned into a tick, in [0, dt).
  [[nodiscard]] std::chrono::nanoseconds leftover() const;

  /// leftover / dt in [0, 1): how far a renderer should blend from the previous tick's state
  /// towards the current one.
  [[nodiscard]] double alpha() const;

  /// Ticks handed out so far.
  [[nodiscard]] std::uint64_t ticks() const { return ticks_; }

  /// Total time dropped by the clamp so far.
  [[nodiscard]] std::chrono::nanoseconds dropped() const { return dropped_; }

  /// The tick length, rounded to the nearest nanosecond (for display and pacing only).
  [[nodiscard]] std::chrono::nanoseconds tick_length() const;

  [[nodiscard]] std::uint32_t tick_rate_hz() const { return rate_; }

 private:
  static constexpr std::int64_t k_units_per_tick = 1'000'000'000;
  std::uint32_t rate_;
  std::uint32_t max_steps_;
  std::int64_t leftover_units_ = 0;  ///< in [0, k_units_per_tick)
  std::uint64_t ticks_ = 0;
  std::chrono::nanoseconds dropped_{0};
};

/// Linear interpolation for rendering between two tick states: previous + (current − previous)·α.
/// For drawing only: its result never feeds a step, so how it rounds cannot change a hash.
constexpr double blend(double previous, double current, double alpha) {
  return previous + (current - previous) * alpha;
}
constexpr Vec2 blend(Vec2 previous, Vec2 current, double alpha) {
  return {blend(previous.x, current.x, alpha), blend(previous.y, current.y, alpha)};
}

}  // namespace lockstep
