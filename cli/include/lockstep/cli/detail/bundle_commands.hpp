#pragma once
// A desync evidence bundle (replay/evidence_bundle.hpp) through `info`, `diff`, `replay
// --participant N` and `view`: the participants and their hashes at the desync, the participants
// grouped by their state there with the first fields each group differs in from the host's, one
// participant's evidence re-simulated, and two participants overlaid. What needs no simulation
// type is compiled once in the cli library (src/bundle_commands.cpp).

#include <cstdint>
#include <cstdio>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/text.hpp"
#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "lockstep/replay/field_report.hpp"
#include "lockstep/replay/phase_divergence.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::cli::detail {

/// A participant's own state at a desync, from an evidence bundle.
template <Simulation S>
struct EvidenceState {
  S sim;
  std::uint64_t tick = 0;
  std::uint64_t bytes = 0;  ///< the snapshot's size
};

/// A bundle read for a command; throws its reader's one-line error.
replay::EvidenceBundle read_bundle_or_throw(const std::string& path);

/// `info BUNDLE`: the desync, and each participant with its hash and evidence (or why it is missing).
void info_bundle(const std::string& path, const replay::EvidenceBundle& bundle);

/// "#2 (slot 1)": how commands name participant `index`.
std::string participant_label(const replay::EvidenceBundle& bundle, std::size_t index);

/// The evidence replay of participant `index`, parsed; throws when there is no such participant
/// or its evidence is missing.
replay::ReplayFile participant_replay(const replay::EvidenceBundle& bundle, std::size_t index);

/// A participant's state at the desync tick (its latest, if that was gone), decoded.
template <Simulation S>
EvidenceState<S> participant_state(const replay::EvidenceBundle& bundle, std::size_t index) {
  const replay::BundleParticipant& p = bundle.participants[index];
  EvidenceState<S> state;
  state.bytes = p.state.size();
  if (Status decoded = decode_snapshot<S>(p.state, state.sim, state.tick); !decoded) {
    throw CommandError{participant_label(bundle, index) + "'s state: " + decoded.error().message};
  }
  return state;
}

/// Participants whose states at the desync agree: the same tick and hash.
struct BundleGroup {
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
  std::vector<std::size_t> members;  ///< participants' indices, ascending
  std::uint8_t bits = 64;            ///< 32: only the low halves of reported hashes are known
  bool host = false;                 ///< the host's (participant 0's, without a host)
  [[nodiscard]] bool has(std::size_t index) const;
};

/// Each participant's state (tick, hash): computed from its state when present, as it reported
/// it when missing (none: it reported nothing, and it is in no group). A hash of 32 bits (the
/// wire's) joins the group whose hash it is the low half of.
struct StateKey {
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
  std::uint8_t bits = 64;
};

/// The participants grouped by their state, the host's group first (participant 0's, without a
/// host; marked `host`, unless the host is in none), the others in the order of their first member.
std::vector<BundleGroup> group_by_state(const std::vector<std::optional<StateKey>>& keys, const replay::EvidenceBundle& bundle);

/// The first present member of a group (the one its fields are shown from), if any.
std::optional<std::size_t> first_present(const BundleGroup& group, const replay::EvidenceBundle& bundle);

/// Prints the groups and the participants not in any; returns how many are in one.
std::size_t print_groups(const std::vector<BundleGroup>& groups, const replay::EvidenceBundle& bundle);

/// What two present participants' evidence replays say: where their re-simulations first differ
/// (a tick's hash, or with phase hashes the substep and phase), or that they agree throughout.
void print_replays_compared(const replay::ReplayFile& reference, const replay::ReplayFile& other);

template <Simulation S>
std::vector<std::optional<StateKey>> state_keys(const replay::EvidenceBundle& bundle) {
  std::vector<std::optional<StateKey>> keys(bundle.participants.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const replay::BundleParticipant& p = bundle.participants[i];
    if (p.present()) {
      EvidenceState<S> state = participant_state<S>(bundle, i);
      keys[i] = StateKey{state.tick, Runner<S>(std::move(state.sim), state.tick).hash()};
      // Its state of the desync tick was gone (it sent its latest): placed by what it reported.
      if (state.tick != bundle.desync_tick && p.desync_hash) {
        keys[i] = StateKey{bundle.desync_tick, p.desync_hash->value, p.desync_hash->bits};
      }
    } else if (p.desync_hash) {
      keys[i] = StateKey{bundle.desync_tick, p.desync_hash->value, p.desync_hash->bits};
    }
  }
  return keys;
}

/// `diff BUNDLE`: the groups, then for each group beside the host's the first fields in which its
/// first present member's state differs from the host's group's, and what their replays say.
/// Exit 1 when the participants are in more than one group; else 4 (unverified) when some could
/// not be compared, 0 when all agree.
template <Simulation S>
void diff_bundle(const replay::EvidenceBundle& bundle, std::size_t max_fields, std::uint64_t max_state_mb, int* exit_code) {
  const std::vector<BundleGroup> groups = group_by_state(state_keys<S>(bundle), bundle);
  const std::size_t compared = print_groups(groups, bundle);
  *exit_code = groups.size() > 1 ? k_exit_failed : compared < bundle.participants.size() ? k_exit_unverified : k_exit_ok;
  if (groups.size() < 2) return;
  const std::optional<std::size_t> reference = first_present(groups[0], bundle);
  if (!reference) {
    std::printf("no field report: no participant of the host's group sent its evidence\n");
    return;
  }
  const EvidenceState<S> ours = participant_state<S>(bundle, *reference);
  const replay::ReplayFile our_replay = participant_replay(bundle, *reference);
  for (std::size_t g = 1; g < groups.size(); ++g) {
    const std::optional<std::size_t> member = first_present(groups[g], bundle);
    if (!member) continue;  // print_groups said their evidence is missing
    const EvidenceState<S> theirs = participant_state<S>(bundle, *member);
    std::printf("%s against %s:\n", participant_label(bundle, *member).c_str(), participant_label(bundle, *reference).c_str());
    print_replays_compared(our_replay, participant_replay(bundle, *member));
    replay::DiffResult result;
    result.identical = false;
    result.divergence_tick = result.report_tick = ours.tick;
    if (theirs.tick != ours.tick) {
      std::printf("  (their states are of ticks %llu and %llu: the one of the desync tick was gone)\n",
                  static_cast<unsigned long long>(ours.tick), static_cast<unsigned long long>(theirs.tick));
    }
    replay::report_fields(result, ours.tick, ours.sim, theirs.sim, std::max(ours.bytes, theirs.bytes),
                          max_state_mb << 20);
    print_fields(result, max_fields, &replay::describe_field<S>);
  }
}

/// `view BUNDLE`: the host's group's first present participant, then those shown over it:
/// `participant` when `chosen`, else the first present participant of every other group (the first
/// view::k_max_view_worlds − 1 of them). (A flag
/// and a number rather than an optional: g++ 12 at -O3 takes an optional's value for
/// uninitialised here.)
template <Simulation S>
std::vector<std::size_t> view_participants(const replay::EvidenceBundle& bundle, bool chosen, std::uint32_t participant) {
  const std::vector<BundleGroup> groups = group_by_state(state_keys<S>(bundle), bundle);
  const std::optional<std::size_t> reference = groups.empty() ? std::nullopt : first_present(groups[0], bundle);
  if (!reference) throw CommandError{"no participant of the host's group sent its evidence: nothing to show it by"};
  if (chosen) {
    (void)participant_replay(bundle, participant);  // throws when missing
    if (participant == *reference) {
      throw CommandError{"--participant " + std::to_string(participant) + " is the one it is shown beside"};
    }
    return {*reference, participant};
  }
  std::vector<std::size_t> shown{*reference};
  for (std::size_t g = 1; g < groups.size() && shown.size() < view::k_max_view_worlds; ++g) {
    if (const std::optional<std::size_t> member = first_present(groups[g], bundle)) shown.push_back(*member);
  }
  if (shown.size() < 2) {
    throw CommandError{"every participant with evidence agrees with the host's: name one to show with --participant N"};
  }
  return shown;
}

}  // namespace lockstep::cli::detail
