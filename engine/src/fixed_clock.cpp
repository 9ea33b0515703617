#include "lockstep/engine/fixed_clock.hpp"

#include <limits>

#include "lockstep/engine/assert.hpp"

namespace lockstep {

FixedClock::FixedClock(std::uint32_t tick_rate_hz, std::uint32_t max_steps)
    : rate_(tick_rate_hz), max_steps_(max_steps) {
  LOCKSTEP_ASSERT(tick_rate_hz >= 1);
  LOCKSTEP_ASSERT(max_steps >= 1);
}

ClockAdvance FixedClock::advance(std::chrono::nanoseconds frame) {
  ClockAdvance out;
  std::int64_t ns = frame.count();
  if (ns <= 0) return out;

  // Whole ticks in the frame are counted separately from its fractional part, so that even an
  // absurd frame time (a debugger pause, a wrapped clock) cannot overflow the unit arithmetic.
  const std::int64_t rate = rate_;
  const std::int64_t whole_seconds = ns / 1'000'000'000;
  const std::int64_t fraction_units = (ns % 1'000'000'000) * rate;
  std::int64_t units = leftover_units_ + fraction_units;
  std::int64_t due = units / k_units_per_tick;
  units -= due * k_units_per_tick;
  const std::int64_t due_limit = std::numeric_limits<std::int64_t>::max() / 2;
  due = whole_seconds > (due_limit - due) / rate ? due_limit : due + whole_seconds * rate;

  if (due > static_cast<std::int64_t>(max_steps_)) {
    const std::int64_t excess = due - static_cast<std::int64_t>(max_steps_);
    // Report the dropped time in nanoseconds, rounded down; saturate rather than overflow.
    const std::int64_t max_ns = std::numeric_limits<std::int64_t>::max();
    const std::int64_t dropped_ns =
        excess > max_ns / k_units_per_tick ? max_ns : excess * k_units_per_tick / rate;
    out.dropped = std::chrono::nanoseconds(dropped_ns);
    out.clamped = true;
    dropped_ += out.dropped;
    due = max_steps_;
  }
  leftover_units_ = units;
  out.ticks = static_cast<std::uint32_t>(due);
  ticks_ += out.ticks;
  return out;
}

std::chrono::nanoseconds FixedClock::leftover() const {
  return std::chrono::nanoseconds(leftover_units_ / static_cast<std::int64_t>(rate_));
}

double FixedClock::alpha() const {
  return static_cast<double>(leftover_units_) / static_cast<double>(k_units_per_tick);
}

std::chrono::nanoseconds FixedClock::tick_length() const {
  const std::int64_t rate = rate_;
  return std::chrono::nanoseconds((k_units_per_tick + rate / 2) / rate);
}

}  // namespace lockstep
