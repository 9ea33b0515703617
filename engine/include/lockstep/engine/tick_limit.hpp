#pragma once
/// The one bound on tick numbers: a runner, a replay file and the wire all keep ticks below it,
/// so a tick fits in 40 bits everywhere (about 580 years at 60 Hz).

#include <cstdint>

namespace lockstep {

/// Tick numbers are below this: the last tick a session, a recording or a run can have is
/// k_tick_limit - 1.
inline constexpr std::uint64_t k_tick_limit = std::uint64_t{1} << 40;

}  // namespace lockstep
