#include "lockstep/replay/phase_divergence.hpp"

namespace lockstep::replay {

std::string describe(const PhaseDivergence& d) {
  const std::string where = "tick " + std::to_string(d.tick) + ", substep " + std::to_string(d.substep + 1ull) + ", after " +
                            printable(d.phase);
  if (d.from_tick != 0 && d.from_tick < d.tick) return "between tick " + std::to_string(d.from_tick) + " and " + where;
  return where;
}

std::optional<PhaseDivergence> first_difference(std::uint64_t tick, const std::vector<NamedCheckpoint>& expected,
                                                const std::vector<NamedCheckpoint>& actual) {
  const std::size_t common = std::min(expected.size(), actual.size());
  for (std::size_t i = 0; i < common; ++i) {
    const NamedCheckpoint& e = expected[i];
    const NamedCheckpoint& a = actual[i];
    if (e.substep == a.substep && e.phase == a.phase && e.hash == a.hash) continue;
    // Another checkpoint here (a step that took another path) is named as the recording has it.
    return PhaseDivergence{tick, e.substep, e.phase, e.hash, e.substep == a.substep && e.phase == a.phase ? a.hash : 0, tick};
  }
  if (expected.size() == actual.size()) return std::nullopt;
  const NamedCheckpoint& extra = expected.size() > common ? expected[common] : actual[common];
  return PhaseDivergence{tick, extra.substep, extra.phase, expected.size() > common ? extra.hash : 0,
                         actual.size() > common ? extra.hash : 0, tick};
}

std::vector<NamedCheckpoint> recorded_checkpoints(const ReplayFile& file, std::uint64_t tick) {
  std::vector<NamedCheckpoint> named;
  for (const PhaseCheckpoint& c : file.phases_at(tick)) {
    named.push_back({c.substep, c.phase < file.phase_names.size() ? file.phase_names[c.phase] : "(unnamed)", c.hash});
  }
  return named;
}

std::optional<PhaseDivergence> compare_recorded_phases(const ReplayFile& a, const ReplayFile& b) {
  const std::vector<std::uint64_t> ticks_a = a.phase_ticks();
  const std::vector<std::uint64_t> ticks_b = b.phase_ticks();
  std::vector<std::uint64_t> both;
  std::set_intersection(ticks_a.begin(), ticks_a.end(), ticks_b.begin(), ticks_b.end(), std::back_inserter(both));
  for (const std::uint64_t tick : both) {
    if (std::optional<PhaseDivergence> d = first_difference(tick, recorded_checkpoints(a, tick), recorded_checkpoints(b, tick))) {
      return d;
    }
  }
  return std::nullopt;
}

}  // namespace lockstep::replay
