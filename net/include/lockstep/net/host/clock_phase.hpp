#pragma once
/// Time sync for prediction (host --rollback W): the host estimates each player's clock against
/// its own from when the player's inputs arrive, and tells each player how far it runs ahead of
/// the slowest, so that it slows down a little (as GGPO's and GGRS's time sync do) and no player
/// predicts further than the round trip makes it. Observations in, leads out: no network, no clock.
///
/// A player produces its input for tick t + D + 1 as its clock reaches tick t, and sends it about
/// at once. An update that arrives at host time T holding a player's inputs through tick h was sent
/// about half a round trip before, so the player's clock then stood near h − D − 1 + rtt/2 (in
/// ticks) while the host's stands at T: their difference is the player's offset. D is the same for
/// every player, so it drops out of the leads and is left out here. A player's offset is the median
/// of its last observations, not their mean: a datagram read late because a process was not
/// scheduled makes its sender look behind, never ahead, and such lateness comes in bursts of tens
/// of milliseconds on a loaded machine, which a mean takes in and a median leaves out (the round
/// trip it is set against is a median too). A player's lead is its offset minus the smallest one
/// (the slowest player's).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "lockstep/net/io/time.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

class ClockPhases {
 public:
  /// How many of a player's latest observations its offset is the median of (about half a second
  /// of updates at 60 Hz).
  static constexpr std::size_t k_observations = 31;
  /// An offset not observed for this long (a silent or departed player) no longer counts.
  static constexpr Duration k_stale_after = std::chrono::milliseconds(1000);

  /// Offsets are in ticks of `tick_rate_hz`, against the clock that started at `start`.
  void start(Instant start, std::uint32_t tick_rate_hz) {
    start_ = start;
    tick_us_ = 1'000'000.0 / static_cast<double>(tick_rate_hz == 0 ? 1 : tick_rate_hz);
    slots_ = {};
  }
  /// At `now`, the host holds `slot`'s inputs through `held_through`; they left the player about
  /// half of `rtt_ms` ago (0 for the host's own slot).
  void observe(Slot slot, std::uint64_t held_through, Instant now, double rtt_ms);
  /// Forgets a slot (its player left, or it is taken again).
  void forget(Slot slot) {
    if (slot < slots_.size()) slots_[slot] = {};
  }
  /// How many whole ticks `slot`'s clock runs ahead of the slowest player's (0 when not known),
  /// at most 127.
  [[nodiscard]] std::int8_t lead(Slot slot, Instant now) const;

 private:
  struct PlayerClock {
    std::array<double, k_observations> offsets{};  ///< in ticks, a ring
    std::size_t count = 0;                         ///< observations made, all time
    std::optional<double> offset;                  ///< the median of the ring
    Instant seen{0};
  };
  Instant start_{0};
  double tick_us_ = 1'000'000.0 / 60.0;
  std::array<PlayerClock, k_max_session_players> slots_{};
};

}  // namespace lockstep::net
