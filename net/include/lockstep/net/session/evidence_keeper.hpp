#pragma once
/// What a participant keeps so that it can leave evidence of a desync: its own state at each of
/// the last k_ring ticks, and the states a replay of the agreed inputs re-simulates from (the one
/// it started from, then one every k_tick_window ticks, the last two kept). A session owns one.

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/session/desync_evidence.hpp"

namespace lockstep::net {

template <Simulation S>
class EvidenceKeeper {
 public:
  /// The snapshots kept: the state at any of the last this-many ticks.
  static constexpr std::uint64_t k_ring = 64;

  /// `build`: the compiler and flags its evidence replays name (empty: this build's).
  explicit EvidenceKeeper(std::string build = {}) : build_(std::move(build)) {}

  /// The participant's first state is its configuration's, at `tick` (unless it started from one).
  void start_from_configuration(std::uint64_t tick) {
    if (kept_.empty()) kept_.push_back({tick, {}});
  }
  /// The participant (starts again) from the host's state at `tick`: replays start there.
  void start_from_state(std::uint64_t tick, std::vector<std::byte> snapshot) { kept_.assign(1, {tick, std::move(snapshot)}); }

  /// The runner stepped a confirmed tick: its state joins the ring; every k_tick_window ticks it is
  /// also kept to re-simulate from. Returns the tick through which nothing older is needed (for
  /// the protocol to forget), when that moved.
  std::optional<std::uint64_t> note_stepped(const Runner<S>& runner) {
    const std::uint64_t tick = runner.tick();
    runner.save_into(ring_[tick % k_ring]);
    if (tick % k_tick_window != 0) return std::nullopt;
    kept_.push_back({tick, runner.save().bytes});
    if (kept_.size() > 2) kept_.pop_front();
    return kept_.front().tick;
  }

  /// This participant's evidence of a desync at `desync_tick`: a replay of the agreed inputs from
  /// the latest state kept before it, and its own state then (or its latest, at `current_tick`,
  /// if that is gone from the ring). Fails, saying why, when nothing kept shows the desync.
  Result<ParticipantEvidence> evidence(const typename S::Config& config, std::uint64_t seed, const TickLog& ticks,
                                       std::uint64_t desync_tick, std::uint64_t current_tick) const {
    // The replay goes from the latest state kept before the desync.
    const auto from = std::find_if(kept_.rbegin(), kept_.rend(), [&](const Kept& k) { return k.tick < desync_tick; });
    if (from == kept_.rend()) {
      // A late joiner whose start state is already past the desync has nothing to show of it.
      return fail("the desync is at tick ", desync_tick, ", before this participant's earliest kept state, of tick ",
                  kept_.front().tick);
    }
    Result<std::vector<std::byte>> replay =
        evidence_replay<S>(config, seed, ticks, std::min(desync_tick, ticks.known_through()), from->snapshot, build_);
    if (!replay) return replay.error();
    const std::uint64_t at = std::min(desync_tick, current_tick);
    const std::uint64_t own = current_tick - at < k_ring ? at : current_tick;
    return ParticipantEvidence{from->tick, std::move(replay).value(), ring_[own % k_ring]};
  }

 private:
  struct Kept {
    std::uint64_t tick = 0;
    std::vector<std::byte> snapshot;  ///< empty: the configuration's state
  };
  std::array<std::vector<std::byte>, k_ring> ring_{};
  std::deque<Kept> kept_;
  std::string build_;
};

}  // namespace lockstep::net
