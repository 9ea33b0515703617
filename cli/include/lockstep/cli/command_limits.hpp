#pragma once
// The bounds the command line puts on its options, each named once: the help text, the validators
// and tests/tools/limits.tests.cpp read them here. What a format, the wire or the world can hold
// is bounded where that lives (engine/world_config.hpp, net/wire/wire.hpp, replay/format.hpp); these are
// the command line's own, there so that a mistyped number is refused at once instead of running
// for months or asking for terabytes.

#include <cstdint>

namespace lockstep::cli {

/// The most ticks `run` and `play` step, and the last tick `host --ticks` takes: 193 days at
/// 60 Hz. What a recording or a session can hold goes on to k_tick_limit.
inline constexpr std::uint64_t k_max_command_ticks = 1'000'000'000;

/// A UDP or TCP port (`--port`, `--view=PORT`); 0 asks the system for any free one.
inline constexpr std::uint64_t k_max_port = 65535;

/// `--timeout-ms`: silence after which the other side of a session is gone (100 ms to 10 min).
inline constexpr std::uint64_t k_min_timeout_ms = 100;
inline constexpr std::uint64_t k_max_timeout_ms = 600'000;
/// `host --notify-ms`: silence after which a player is reported interrupted (50 ms to 10 min).
inline constexpr std::uint64_t k_min_notify_ms = 50;
inline constexpr std::uint64_t k_max_notify_ms = 600'000;
/// `host --wait-timeout`: seconds to wait for the slots to fill (at most a day).
inline constexpr std::uint64_t k_max_wait_timeout_s = 86'400;

/// `--max-state-mb`: the largest state built from a file (1 MB to 1 TB).
inline constexpr std::uint64_t k_max_state_mb = std::uint64_t{1} << 20;
/// `diff --max-fields`: differing fields listed.
inline constexpr std::uint64_t k_max_diff_fields = 1'000'000;

/// `regress --jobs`: cases at once, each in its own process.
inline constexpr std::uint64_t k_max_regress_jobs = 1024;
/// `regress --case-timeout`: seconds one case may run (at most a week).
inline constexpr std::uint64_t k_max_case_timeout_s = 7 * 24 * 3600;
/// `regress --case-memory-mb`: one case's memory (16 MB to 16 TB).
inline constexpr std::uint64_t k_min_case_memory_mb = 16;
inline constexpr std::uint64_t k_max_case_memory_mb = std::uint64_t{1} << 24;

/// `lab ball --ticks` and `lab energy --steps`.
inline constexpr std::uint64_t k_max_lab_steps = 100'000'000;

}  // namespace lockstep::cli
