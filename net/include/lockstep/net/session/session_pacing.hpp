#pragma once
/// A session's pace: the fixed-step clock that runs from tick 1's start time at the session's
/// tick rate, the ticks it has made due and not yet stepped, and what pacing counts (stalls of a
/// player, how far behind the clock a spectator fell). With prediction, time sync: a player whose
/// clock runs ahead of the slowest lets some of its clock's ticks pass unstepped.
///
/// The session decides when a player stalls (it knows the ticks in hand and the window); this type
/// keeps the clock's side of it, so that every count is kept in one place.

#include <cstdint>
#include <optional>

#include "lockstep/engine/fixed_clock.hpp"
#include "lockstep/net/io/time.hpp"

namespace lockstep::net {

class SessionPacing {
 public:
  /// Ticks due at once at most: a program that was paused longer steps no more than these at once.
  static constexpr std::uint64_t k_max_due = 8;

  /// What pacing needs to know of the session at a frame.
  struct Frame {
    bool player = false;       ///< spectators and relay hosts step as inputs arrive, unpaced
    bool predicting = false;   ///< a player stepping ahead of the confirmed ticks (by its clock)
    bool catching_up = false;  ///< a player stepping from a state to the session's tick, unpaced
    std::uint64_t stepped = 0;        ///< the confirmed tick
    std::uint64_t present = 0;        ///< the present tick (ahead of `stepped` with prediction)
    std::uint64_t known_through = 0;  ///< every input is in hand through this tick
    std::uint64_t given_through = 0;  ///< this player's own inputs are given through this tick
    std::uint64_t end_tick = 0;
    std::uint32_t window = 0;         ///< the prediction window in force
    std::uint32_t tick_rate_hz = 60;
    std::int8_t lead = 0;  ///< with prediction: how far this player's clock runs ahead of the slowest
    std::optional<double> rtt_ms;     ///< the round trip to the host
  };

  /// The clock at `tick_rate_hz` (once the session has its parameters).
  void start_clock(std::uint32_t tick_rate_hz);
  /// The clock runs (tick 1's start time has passed).
  [[nodiscard]] bool started() const { return started_; }
  /// A frame at `now`; the clock runs from `start` (tick 1's start time, ≤ now). The ticks the
  /// clock made become due (at most k_max_due in all; with prediction, less those time sync lets
  /// pass). A player whose next tick is due and whose inputs are not in hand stalls: without
  /// prediction at the next confirmed tick, with prediction only at the window's edge. A spectator
  /// notes how far behind the clock it is.
  void pace(Instant start, Instant now, const Frame& frame);
  /// When the clock makes its next tick (none before it runs).
  [[nodiscard]] std::optional<Instant> next_tick_at() const;
  /// Ticks due by the clock and not yet stepped.
  [[nodiscard]] std::uint64_t due() const { return due_; }
  /// One due tick was stepped (or shown, predicted).
  void take_due() {
    if (due_ > 0) --due_;
  }
  /// The session starts from the state at `tick` (a late joiner): the clock's tick is that one.
  void start_at(std::uint64_t tick) { clock_ticks_ = tick; }
  /// The clock's ticks since tick 1's start, uncapped (input latency is counted in them).
  [[nodiscard]] std::uint64_t clock_count() const { return clock_count_; }
  /// How far between the last tick and the next the display is (0 before the clock exists).
  [[nodiscard]] double alpha() const { return clock_ ? clock_->alpha() : 0.0; }
  /// Ticks a player waited for inputs (each counted once), and how far behind the clock a
  /// spectator fell at most.
  [[nodiscard]] std::uint64_t stalls() const { return stalls_; }
  [[nodiscard]] std::uint64_t behind() const { return behind_; }

 private:
  /// Time passed to `now`: the ticks the clock made (its tick capped at `end_tick`).
  std::uint32_t advance(Instant start, Instant now, std::uint64_t end_tick);
  /// Time sync with prediction: when the host says this player's clock leads the slowest, one of
  /// the clock's ticks passes unstepped, and the lead is looked at again a round trip and 16 ticks
  /// later (the host's estimate follows with that delay). Returns the ticks of `ticks` to step.
  std::uint64_t time_sync(std::uint64_t ticks, Instant now, const Frame& frame);
  /// A player waits for `tick`'s inputs: a stall, counted once per tick. It gives up the time it
  /// waited instead of rushing to catch up later, and so settles in phase with the slowest.
  void stall_on(std::uint64_t tick);

  std::optional<FixedClock> clock_;
  bool started_ = false;
  Instant last_frame_{0};
  std::uint64_t due_ = 0;
  std::uint64_t clock_ticks_ = 0;  ///< the clock's tick, capped at the end tick
  std::uint64_t clock_count_ = 0;
  std::uint64_t stalls_ = 0;
  std::uint64_t stalled_on_ = 0;
  std::uint64_t behind_ = 0;
  std::uint64_t sync_debt_ = 0;  ///< clock ticks to let pass unstepped (time sync)
  Instant sync_hold_until_{0};
};

}  // namespace lockstep::net
