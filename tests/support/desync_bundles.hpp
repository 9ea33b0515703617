#pragma once
// Desync evidence bundles made as a host makes them, from participants' real evidence: a session
// stepped by hand, each participant with its own runner and EvidenceKeeper.

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/session/evidence_keeper.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "bot_inputs.hpp"
#include "nudged_world.hpp"
#include "sessions.hpp"

namespace lockstep::testing {

inline constexpr std::uint64_t k_bundle_seed = 11;
inline constexpr std::uint64_t k_bundle_desync_tick = 150;
inline constexpr std::uint64_t k_bundle_last_tick = 160;

/// A session of `participants` (the host, playing slot 0, then players) stepped to
/// k_bundle_last_tick by hand, each participant with its own runner and EvidenceKeeper; those in
/// `diverging` have body 1 nudged after stepping k_bundle_desync_tick (as --debug-perturb-tick
/// does), those in `missing` send nothing (the host knows the low 32 bits of their hashes). With
/// `other_build`, the diverging ones' evidence replays are re-simulated by a build that steps
/// differently (NudgedWorld, nudged in the desync tick's substep 3 after "contacts"). With `apart`,
/// each diverging one is nudged by its own amount (each its own group). The bundle the host would
/// write.
inline replay::EvidenceBundle make_bundle(std::uint32_t participants, const std::set<std::uint32_t>& diverging,
                                          const std::set<std::uint32_t>& missing = {}, bool other_build = false,
                                          bool apart = false) {
  WorldConfig played = small_arena(60);
  played.players = participants;
  net::TickLog log(participants, ButtonInput::k_bytes);
  std::vector<Runner<World>> runners;
  std::vector<net::EvidenceKeeper<World>> keepers(participants);
  std::vector<std::uint64_t> desync_hashes(participants);
  for (std::uint32_t i = 0; i < participants; ++i) {
    runners.push_back(Runner<World>::create(played, k_bundle_seed).value());
    keepers[i].start_from_configuration(0);
  }
  BotInputs bots(k_bundle_seed, participants);
  for (std::uint64_t t = 1; t <= k_bundle_last_tick; ++t) {
    const std::span<const ButtonInput> inputs = bots.next();
    std::vector<std::byte> raw(participants * ButtonInput::k_bytes);
    for (std::uint32_t p = 0; p < participants; ++p) {
      inputs[p].to_bytes(std::span<std::byte, ButtonInput::k_bytes>(raw.data() + p * ButtonInput::k_bytes, ButtonInput::k_bytes));
    }
    log.append(raw);
    for (std::uint32_t i = 0; i < participants; ++i) {
      REQUIRE(runners[i].step(inputs).ok());
      if (t == k_bundle_desync_tick && diverging.contains(i)) {
        World& world = runners[i].simulation_for_update();
        const Vec2 v = world.velocity(BodyId{1});
        world.set_velocity(BodyId{1}, {v.x + 1e-6 * (apart ? i : 1), v.y});
        runners[i].rehash();
      }
      (void)keepers[i].note_stepped(runners[i]);
      if (t == k_bundle_desync_tick) desync_hashes[i] = runners[i].hash();
    }
  }
  replay::EvidenceBundle bundle;
  bundle.simulation = std::string(World::k_name);
  bundle.session = 0x5E55;
  bundle.desync_tick = k_bundle_desync_tick;
  bundle.agreed_tick = k_bundle_desync_tick - 1;
  for (std::uint32_t i = 0; i < participants; ++i) {
    replay::BundleParticipant p;
    p.role = i == 0 ? replay::ParticipantRole::host : replay::ParticipantRole::player;
    p.slot = i;
    p.desync_hash = replay::ReportedHash{desync_hashes[i], 64};
    if (missing.contains(i)) {
      // The host knows a missing participant's hash only as the wire carries it: its low 32 bits.
      p.desync_hash = replay::ReportedHash{desync_hashes[i] & 0xFFFFFFFFu, 32};
      p.missing = "it sent nothing within 2,000 ms";
    } else {
      Result<net::ParticipantEvidence> evidence =
          keepers[i].evidence(played, k_bundle_seed, log, k_bundle_desync_tick, k_bundle_last_tick);
      REQUIRE(evidence.ok());
      p.replay = std::move(evidence->replay);
      p.state = std::move(evidence->state);
      if (other_build && diverging.contains(i)) {
        NudgedWorld::nudge() = Nudge{0, 2, "contacts", false, k_bundle_desync_tick, 0};
        Result<std::vector<std::byte>> replay =
            net::evidence_replay<NudgedWorld>(played, k_bundle_seed, log, k_bundle_desync_tick, {});
        NudgedWorld::nudge() = Nudge{};
        REQUIRE(replay.ok());
        p.replay = std::move(replay).value();
      }
    }
    bundle.participants.push_back(std::move(p));
  }
  return bundle;
}

}  // namespace lockstep::testing
