#pragma once
/// A change of the input delay an adaptive host announces.

#include <cstdint>

namespace lockstep::net {

/// From `tick` on (see LockstepProtocol::input_delay_after) players produce their inputs `delay`
/// ticks ahead.
struct DelayChange {
  std::uint64_t tick = 0;
  std::uint32_t delay = 0;
  friend bool operator==(const DelayChange&, const DelayChange&) = default;
};

}  // namespace lockstep::net
