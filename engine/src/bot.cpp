#include "lockstep/engine/bot.hpp"

namespace lockstep {

Bot::Bot(std::uint64_t session_seed, std::uint32_t slot)
    : rng_(derive_seed(session_seed, 0xB07'0000ull + slot)) {}

ButtonInput Bot::next() {
  if (ticks_left_ == 0) {
    // A person mostly steers, often thrusts, sometimes rests and rarely presses action; never
    // left and right at once.
    std::uint16_t buttons = 0;
    if (rng_.below(100) < 45) buttons |= ButtonInput::k_up;
    const std::uint32_t steer = rng_.below(100);
    if (steer < 30) {
      buttons |= ButtonInput::k_left;
    } else if (steer < 60) {
      buttons |= ButtonInput::k_right;
    }
    if (rng_.below(100) < 10) buttons |= ButtonInput::k_action;
    if (rng_.below(100) < 15) buttons = 0;
    held_ = ButtonInput{buttons};
    ticks_left_ = k_min_hold_ticks + rng_.below(k_max_hold_ticks - k_min_hold_ticks + 1);
  }
  --ticks_left_;
  return held_;
}

}  // namespace lockstep
