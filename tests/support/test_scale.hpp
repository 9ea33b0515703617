#pragma once
// How much of the heaviest work a test does in this build. The optimised build runs every case
// at full size; the unoptimised one (g++ -O0, several times slower) runs the same cases shorter,
// since the optimised build already compares every tick of that -O0 binary's hashes with its
// own (the cross-build tests) and runs each case whole.

#include <cstdint>

namespace lockstep::testing {

#ifdef NDEBUG
inline constexpr bool k_full_size = true;
#else
inline constexpr bool k_full_size = false;
#endif

/// `full` in the optimised build, `short_run` in the unoptimised one.
constexpr std::uint64_t scaled(std::uint64_t full, std::uint64_t short_run) { return k_full_size ? full : short_run; }

}  // namespace lockstep::testing
