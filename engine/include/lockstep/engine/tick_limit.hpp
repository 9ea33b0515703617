#pragma once
/// The bounds on ticks: their numbers (a runner, a replay file and the wire all keep ticks below
/// k_tick_limit, so a tick fits in 40 bits everywhere: about 580 years at 60 Hz) and their rate.

#include <cstdint>

namespace lockstep {

/// Tick numbers are below this: the last tick a session, a recording or a run can have is
/// k_tick_limit - 1.
inline constexpr std::uint64_t k_tick_limit = std::uint64_t{1} << 40;

/// Ticks per second a world, a session and the wire take: 1 to this.
inline constexpr std::uint32_t k_max_tick_rate_hz = 1000;

}  // namespace lockstep
