#pragma once
/// Golden regression cases for the built-in world: a scene, a seed, a tick count, the recorded
/// inputs of every player, and the expected state hash of every 100th tick and of the last.
/// Stored as text (tests/golden/*.golden) so a change to one is reviewed like code.
///
///   # comment
///   scene arena            ← then any of: players, bodies, substeps, integrator
///   seed 1
///   ticks 10000
///   inputs 0 37x0009 12x0000 …   ← player, runs of <ticks>x<4 hex digits>; repeatable
///   hash 100 0123456789abcdef
///   …
///
/// "inputs bots" instead of recorded inputs asks `lockstep regress --update` to record the
/// seeded bots' inputs into the file; tests never update goldens.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/world_config.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {

/// Golden hashes are kept for every tick that is a multiple of this, and for the last tick.
inline constexpr std::uint64_t k_golden_hash_every = 100;
inline constexpr std::uint64_t k_max_golden_ticks = 10'000'000;
/// The largest golden case file a reader takes (text: scene, inputs as runs, hashes).
inline constexpr std::uint64_t k_max_golden_file_bytes = 64ull << 20;

struct GoldenCase {
  std::string name;
  WorldConfig config;
  std::uint64_t seed = 0;
  std::uint64_t ticks = 0;
  bool inputs_from_bots = false;
  std::vector<ButtonInput> inputs;  ///< tick-major: inputs[(t − 1)·players + p]
  std::vector<TickHash> hashes;     ///< ascending
};

/// Parses a golden file's text; the message names the line.
Result<GoldenCase> parse_golden(std::string_view text, const std::string& name);

/// The text of a golden case (inputs run-length coded, 16 runs a line).
std::string format_golden(const GoldenCase& golden);

struct GoldenOutcome {
  bool pass = true;
  std::uint64_t divergent_tick = 0;  ///< the first tick whose hash differs
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
  std::vector<TickHash> computed;    ///< every golden tick's hash as this build computes it
};

/// Runs a case headless; `fill_inputs` records bot inputs first when the case asks for them.
/// With `stop_at_divergence` false it runs to the end (to compute fresh hashes for --update).
/// `progress`, if given, is called now and then with the tick reached.
Result<GoldenOutcome> run_golden(GoldenCase& golden, bool stop_at_divergence,
                                 const std::function<void(std::uint64_t tick)>& progress = {});

}  // namespace lockstep::replay
