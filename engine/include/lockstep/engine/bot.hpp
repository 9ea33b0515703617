#pragma once
/// Deterministic input generators that play like people: a bot holds a choice of buttons for
/// several to tens of ticks, then changes its mind. Same session seed and slot, same inputs, on
/// every machine, so headless runs, goldens and networked bot peers all agree.

#include <cstdint>

#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/rng.hpp"

namespace lockstep {

class Bot {
 public:
  static constexpr std::uint32_t k_min_hold_ticks = 6;
  static constexpr std::uint32_t k_max_hold_ticks = 60;

  /// A bot for player `slot` of a session with `session_seed`.
  Bot(std::uint64_t session_seed, std::uint32_t slot);

  /// The input for the next tick.
  ButtonInput next();

 private:
  Rng rng_;
  ButtonInput held_;
  std::uint32_t ticks_left_ = 0;
};

}  // namespace lockstep
