#pragma once
/// Rebaselining a recording after an intended change to a simulation: the same inputs and
/// configuration re-simulated by this build and recorded anew — its hashes, keyframes, phase
/// hashes and compatibility id — into another file, the original untouched; and the first tick
/// whose recorded hash the change moved.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::replay {

struct Rebaselined {
  std::uint64_t ticks = 0;                     ///< ticks re-simulated and recorded
  std::optional<std::uint64_t> changed_from;   ///< the first tick whose recorded hash differs, if any
  /// The new build's step failed (a blown-up state): the copy ends at the tick before it.
  std::string step_error;
};

/// The recording options a file was recorded with (phase hashes every K: the spacing of its
/// first two phase-hash ticks, or its first one's tick).
inline RecordOptions options_of(const ReplayFile& file) {
  RecordOptions options;
  options.hash_every = file.header.hash_every;
  options.keyframe_every = file.header.keyframe_every;
  const std::vector<std::uint64_t> phase_ticks = file.phase_ticks();
  if (phase_ticks.size() >= 2) {
    options.phase_hashes_every = static_cast<std::uint32_t>(std::min<std::uint64_t>(phase_ticks[1] - phase_ticks[0], UINT32_MAX));
  } else if (phase_ticks.size() == 1) {
    options.phase_hashes_every = static_cast<std::uint32_t>(std::min<std::uint64_t>(phase_ticks[0], UINT32_MAX));
  }
  return options;
}

/// Re-simulates `player`'s file from its start (the player must be at its start tick: just
/// opened) and records it to `path` with the file's options. Needs a player opened with force
/// when the file's compatibility id is another build's.
template <Simulation S>
Result<Rebaselined> rebaseline(const Player<S>& player, const std::string& path) {
  const ReplayFile& file = player.file();
  if (player.tick() != player.start_tick()) return fail("rebaseline: the player is not at its start");
  Runner<S> runner(player.runner().simulation(), player.start_tick());
  Result<Recorder<S>> recorder = Recorder<S>::create(path, player.config(), file.header.seed, runner, options_of(file));
  if (!recorder) return recorder.error();
  Rebaselined result;
  if (runner.hash() != file.header.start_hash) result.changed_from = player.start_tick();
  std::vector<typename S::Input> inputs;
  for (std::uint64_t t = player.start_tick() + 1; t <= file.last_tick; ++t) {
    player.inputs_at(t, inputs);
    Result<std::uint64_t> hash = recorder->step(runner, inputs);
    if (!hash) {
      result.step_error = hash.error().message;
      break;
    }
    if (Status recorded = recorder->record(runner, inputs); !recorded) return recorded.error();
    if (!result.changed_from) {
      if (const std::optional<std::uint64_t> held = file.hash_at(t); held && *held != *hash) result.changed_from = t;
    }
    ++result.ticks;
  }
  if (Status finished = recorder->finish(); !finished) return finished.error();
  if (recorder->reached_limit()) result.ticks = recorder->written_tick() - player.start_tick();
  return result;
}

}  // namespace lockstep::replay
