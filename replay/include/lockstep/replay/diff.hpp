#pragma once
/// Finds where two sessions of the same simulation part ways, and explains it field by field.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/field_report.hpp"
#include "lockstep/replay/phase_divergence.hpp"
#include "lockstep/replay/player.hpp"

namespace lockstep::replay {

/// The outcome of comparing two replays (or a replay with its own recorded states).
struct DiffResult {
  bool identical = true;
  std::uint64_t through_tick = 0;     ///< identical: the last tick both hold
  std::uint64_t divergence_tick = 0;  ///< not identical: the first tick whose hashes differ
  std::uint64_t report_tick = 0;      ///< the tick the field report compares (usually the same)
  std::vector<FieldDifference> fields;
  std::string note;                   ///< anything the report could not do, in words
  /// Where inside the step the runs first part, when the simulation reports its phases (and,
  /// against a recording, the file holds phase hashes there).
  std::optional<PhaseDivergence> phase;
  /// Two recordings whose recorded phase hashes differ (recorded by builds that simulate
  /// differently), at the first tick both hold them.
  std::optional<PhaseDivergence> recorded_phase;
};

/// A person's name for a field path, when the simulation offers one
/// (`static std::string describe_field(std::string_view path)`), else "".
template <class S>
std::string describe_field(std::string_view path) {
  if constexpr (requires { { S::describe_field(path) } -> std::convertible_to<std::string>; }) {
    return S::describe_field(path);
  } else {
    return {};
  }
}

/// A field report lists every value of both states as text: about this many bytes of memory for
/// each byte of a state's snapshot.
inline constexpr std::uint64_t k_field_report_bytes_per_state_byte = 25;

/// The fields that differ between two states at `tick`, or a note saying why they are not listed
/// (a report of states this large would exceed the players' state budget).
template <Simulation S>
void report_fields(DiffResult& result, std::uint64_t tick, const S& a, const S& b, std::uint64_t state_bytes,
                   std::uint64_t max_state_bytes) {
  const std::uint64_t needed = k_field_report_bytes_per_state_byte * state_bytes;
  if (needed > max_state_bytes) {
    result.note = "no field report: listing the fields of two states this large takes about " +
                  std::to_string(needed >> 20) + " MB, over the " + std::to_string(max_state_bytes >> 20) +
                  " MB state budget (--max-state-mb raises it)";
    return;
  }
  result.fields = compare_fields(list_fields(tick, a), list_fields(tick, b));
}

/// Steps both replays from the first tick both hold (the later start: a participant that joined
/// a session under way records from the state it received), comparing the state hash there and
/// after every tick, and reports the first tick where they differ with every differing field of
/// the two states.
template <Simulation S>
Result<DiffResult> diff_replays(Player<S>& a, Player<S>& b, const ProgressFn& progress = {}) {
  const std::uint64_t first = std::max(a.start_tick(), b.start_tick());
  const std::uint64_t last = std::min(a.last_tick(), b.last_tick());
  if (first > last) {
    return fail("the replays share no tick (", a.start_tick(), " to ", a.last_tick(), " and ", b.start_tick(), " to ",
                b.last_tick(), ")");
  }
  DiffResult result;
  Result<PlayOutcome> at_start_a = a.seek(first, progress);
  Result<PlayOutcome> at_start_b = b.seek(first, progress);
  if (!at_start_a) return at_start_a.error();
  if (!at_start_b) return at_start_b.error();
  for (std::uint64_t t = first;; ++t) {
    if (a.runner().hash() != b.runner().hash()) {
      result.identical = false;
      result.divergence_tick = t;
      result.report_tick = t;
      report_fields(result, t, a.runner().simulation(), b.runner().simulation(),
                    std::max(a.state_bytes(), b.state_bytes()), std::min(a.max_state_bytes(), b.max_state_bytes()));
      return result;
    }
    if (t == last) break;
    if (progress && (t & 255u) == 0) progress(t);
    Result<std::uint64_t> step_a = a.step();
    Result<std::uint64_t> step_b = b.step();
    if (!step_a) return step_a.error();
    if (!step_b) return step_b.error();
  }
  result.through_tick = last;
  return result;
}

/// Replays one file against its own recording: the first recorded hash that re-simulation does
/// not reproduce, and a field report against the first keyframe at or after it (the recorded
/// state), when the file has one.
template <Simulation S>
Result<DiffResult> diff_against_recording(Player<S>& player, const ProgressFn& progress = {}) {
  DiffResult result;
  Result<PlayOutcome> outcome = player.seek(player.start_tick());
  if (outcome && !outcome->desync) outcome = player.play_to(player.last_tick(), progress);
  if (!outcome) return outcome.error();
  if (!outcome->desync) {
    result.through_tick = player.last_tick();
    return result;
  }
  result.identical = false;
  result.divergence_tick = outcome->desync->tick;
  const std::vector<Keyframe>& keyframes = player.file().keyframes;
  auto keyframe = std::find_if(keyframes.begin(), keyframes.end(),
                               [&](const Keyframe& k) { return k.tick >= result.divergence_tick; });
  if (keyframe == keyframes.end()) {
    result.note = "the file holds no recorded state at or after tick " +
                  std::to_string(result.divergence_tick) + " to compare fields with (record with keyframes)";
    return result;
  }
  Runner<S> recorded{S{}};
  Result<std::vector<std::byte>> snapshot =
      keyframe_snapshot(player.file(), static_cast<std::size_t>(keyframe - keyframes.begin()));
  if (!snapshot) return snapshot.error();
  Status restored = recorded.restore(snapshot.value());
  if (!restored) return fail("the keyframe at tick ", keyframe->tick, " is rejected: ", restored.error().message);
  // Re-simulate from the start (not from a keyframe: those hold the recording's states).
  Result<Player<S>> fresh = Player<S>::open(player.file(), true, player.max_state_bytes());
  if (!fresh) return fresh.error();
  while (fresh->tick() < keyframe->tick) {
    Result<std::uint64_t> stepped = fresh->step();
    if (!stepped) return stepped.error();
  }
  result.report_tick = keyframe->tick;
  report_fields(result, keyframe->tick, recorded.simulation(), fresh->runner().simulation(),
                std::max<std::uint64_t>(snapshot->size(), player.state_bytes()), player.max_state_bytes());
  return result;
}

}  // namespace lockstep::replay
