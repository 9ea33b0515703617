#pragma once
/// Where inside a step two runs first part: the tick, the substep and the phase whose checkpoint
/// hash differs first (engine/step_probe.hpp). From a recording's phase hashes against this
/// build's re-simulation, from two re-simulations, or from two recordings' phase hashes.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/step_probe.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {

struct PhaseDivergence {
  std::uint64_t tick = 0;
  std::uint32_t substep = 0;  ///< from 0, as the step counts them (people are told substep + 1)
  std::string phase;
  std::uint64_t expected = 0;  ///< the first run's (the recording's) checkpoint hash
  std::uint64_t actual = 0;
  /// The first tick it may have begun at: `tick` when the state the step started from is known
  /// to agree (or an earlier checkpoint of the tick agrees); earlier when the file's phase
  /// hashes are sparser than the divergence and the tick's first checkpoint already differs.
  std::uint64_t from_tick = 0;
};

/// "tick 812, substep 3, after contacts" (substeps counted from 1), or, when the divergence may
/// have begun earlier, "between tick 801 and tick 812, substep 1, after springs". The phase name
/// (from a file) is made printable.
std::string describe(const PhaseDivergence& divergence);

/// One side's checkpoints of one tick, by name.
struct NamedCheckpoint {
  std::uint32_t substep = 0;
  std::string phase;
  std::uint64_t hash = 0;
};

/// The first checkpoint where two lists of one tick differ (in hash, or in which checkpoint it
/// is: a step that took another path), if any.
std::optional<PhaseDivergence> first_difference(std::uint64_t tick, const std::vector<NamedCheckpoint>& expected,
                                                const std::vector<NamedCheckpoint>& actual);

/// A file's checkpoints of `tick`, by name.
std::vector<NamedCheckpoint> recorded_checkpoints(const ReplayFile& file, std::uint64_t tick);

/// The first checkpoint at which two recordings' phase hashes differ, at the ticks both hold
/// them; nothing when they agree wherever both have them (or share none).
std::optional<PhaseDivergence> compare_recorded_phases(const ReplayFile& a, const ReplayFile& b);

/// Steps `player` (at `tick - 1`) to `tick` probed and names its checkpoints.
template <ProbedSimulation S>
Result<std::vector<NamedCheckpoint>> probed_step(Player<S>& player, std::uint64_t tick, PhaseNames& names,
                                                 std::vector<PhaseHash>& hashes) {
  if (player.tick() + 1 != tick) return fail("cannot probe tick ", tick, " from tick ", player.tick());
  Result<std::uint64_t> stepped = player.step_probed(names, hashes);
  if (!stepped) return stepped.error();
  std::vector<NamedCheckpoint> named;
  for (const PhaseHash& h : hashes) named.push_back({h.substep, std::string(names.name(h.phase)), h.hash});
  return named;
}

/// A recording that diverges from its re-simulation somewhere in (after, through], `after`
/// being a tick whose state is known to agree: the first checkpoint whose hash differs from the
/// recorded one, at the first of the file's phase-hash ticks in that range that differs;
/// nothing when the file holds no phase hashes there or they all agree. Every checkpoint hashes
/// the whole state, so one that agrees vouches for the state up to it: the first differing
/// checkpoint names its phase exactly unless it is the tick's first and the state the step
/// started from is not known to agree (then from_tick says how far back it may lie; a step's
/// last checkpoint comes after its last change to the state, so a tick whose checkpoints all
/// agree moves that bound). Moves the player.
template <ProbedSimulation S>
Result<std::optional<PhaseDivergence>> locate_in_recording(Player<S>& player, std::uint64_t after, std::uint64_t through) {
  PhaseNames names;
  std::vector<PhaseHash> hashes;
  std::uint64_t agreed = std::max(after, player.start_tick());  // the last tick whose end state agrees
  for (const std::uint64_t tick : player.file().phase_ticks()) {
    if (tick <= agreed) continue;
    if (tick > through) break;
    Result<PlayOutcome> at = player.seek(tick - 1);
    if (!at) return at.error();
    if (at->desync || player.tick() != tick - 1) return fail("cannot reach tick ", tick - 1, " to probe tick ", tick);
    Result<std::vector<NamedCheckpoint>> probed = probed_step(player, tick, names, hashes);
    if (!probed) return probed.error();
    const std::vector<NamedCheckpoint> recorded = recorded_checkpoints(player.file(), tick);
    if (std::optional<PhaseDivergence> d = first_difference(tick, recorded, *probed)) {
      const bool first_checkpoint = !recorded.empty() && !probed->empty() && d->substep == recorded.front().substep &&
                                    d->phase == recorded.front().phase && recorded.front().hash != probed->front().hash;
      d->from_tick = first_checkpoint && tick - 1 != agreed ? agreed + 1 : tick;
      return std::optional<PhaseDivergence>(std::move(d));
    }
    agreed = tick;
  }
  return std::optional<PhaseDivergence>();
}

/// A player of the same file re-simulating from its start up to `tick` (the file's keyframes
/// are its recording's states, not this build's), checking nothing.
template <Simulation S>
Result<Player<S>> resimulated_to(const Player<S>& player, std::uint64_t tick) {
  Result<Player<S>> fresh = Player<S>::open(player.file(), true, player.max_state_bytes());
  if (!fresh) return fresh.error();
  while (fresh->tick() < tick) {
    Result<std::uint64_t> stepped = fresh->step();
    if (!stepped) return stepped.error();
  }
  return fresh;
}

/// Two re-simulations whose states agree after `tick - 1` and first differ after `tick`: the
/// first checkpoint of that tick's step where they part.
template <ProbedSimulation S>
Result<std::optional<PhaseDivergence>> locate_between(const Player<S>& a, const Player<S>& b, std::uint64_t tick) {
  Result<Player<S>> fresh_a = resimulated_to(a, tick - 1);
  if (!fresh_a) return fresh_a.error();
  Result<Player<S>> fresh_b = resimulated_to(b, tick - 1);
  if (!fresh_b) return fresh_b.error();
  PhaseNames names;
  std::vector<PhaseHash> hashes_a;
  std::vector<PhaseHash> hashes_b;
  Result<std::vector<NamedCheckpoint>> in_a = probed_step(*fresh_a, tick, names, hashes_a);
  if (!in_a) return in_a.error();
  Result<std::vector<NamedCheckpoint>> in_b = probed_step(*fresh_b, tick, names, hashes_b);
  if (!in_b) return in_b.error();
  std::optional<PhaseDivergence> d = first_difference(tick, *in_a, *in_b);
  if (d) d->from_tick = tick;
  return d;
}

/// Where inside a step a recording's re-simulation first parts from it, given the tick whose
/// recorded hash it first fails: when S reports its phases and the file holds phase hashes after
/// the last recorded hash that held and by that tick. Moves the player; nothing when unknown.
template <Simulation S>
std::optional<PhaseDivergence> phase_of_desync(Player<S>& player, std::uint64_t desync_tick) {
  if constexpr (ProbedSimulation<S>) {
    const ReplayFile& file = player.file();
    if (file.phase_hashes.empty()) return std::nullopt;
    auto held = std::lower_bound(file.hashes.begin(), file.hashes.end(), desync_tick,
                                 [](const TickHash& h, std::uint64_t t) { return h.tick < t; });
    const std::uint64_t after = held == file.hashes.begin() ? player.start_tick() : std::prev(held)->tick;
    Result<std::optional<PhaseDivergence>> located = locate_in_recording(player, after, desync_tick);
    if (located) return *located;
  }
  return std::nullopt;
}

}  // namespace lockstep::replay
