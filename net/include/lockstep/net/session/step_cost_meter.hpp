#pragma once
/// The mean cost of a step, timed by a clock the program gives (drive() gives its thread's CPU
/// time). With prediction a session predicts only as far as its steps fit a tick; without a clock
/// (virtual time, where a step costs nothing) nothing is measured.

#include <cstdint>
#include <functional>

#include "lockstep/net/io/time.hpp"

namespace lockstep::net {

class StepCostMeter {
 public:
  /// Steps that only start the mean: the first ones run cold.
  static constexpr std::uint64_t k_warmup = 32;

  /// The clock steps are timed with (a monotonic one); unset: nothing is measured.
  void set_clock(std::function<Instant()> clock) { clock_ = std::move(clock); }
  /// The clock's time when a step begins (0 without a clock).
  [[nodiscard]] Instant begin() const { return clock_ ? clock_() : Instant{0}; }
  /// A step that began at `began` ended now: its cost joins the mean. After the warm-up one step
  /// counts for at most four times the mean (a step the scheduler paused is no measure), a
  /// sixteenth each. Returns whether the mean is past its warm-up (and so worth acting on).
  bool end(Instant began);
  /// The steps' mean cost in microseconds (0: not measured).
  [[nodiscard]] double mean_us() const { return mean_us_; }

 private:
  std::function<Instant()> clock_;
  std::uint64_t measured_ = 0;
  double mean_us_ = 0;
};

}  // namespace lockstep::net
