// EvidenceKeeper alone: which states it keeps, when the protocol may forget, and the evidence it
// gives (a replay to the desync and this participant's own state there).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/session/evidence_keeper.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::WalkerInput;
using lockstep::testing::WalkerSim;

namespace {

/// A two-walker session stepped `ticks` ticks, its inputs in a tick log, every state noted.
struct Stepped {
  Runner<WalkerSim> runner = Runner<WalkerSim>::create({}, 9).value();
  net::TickLog log{2, 1, 0};
  net::EvidenceKeeper<WalkerSim> keeper;
  std::vector<std::uint64_t> hashes{runner.hash()};  ///< by tick
  std::vector<std::uint64_t> forget_ticks;           ///< the ticks note_stepped said to forget through
  std::vector<std::uint64_t> forget_at;              ///< … and at which tick it said so

  explicit Stepped(std::uint64_t ticks) {
    keeper.start_from_configuration(0);
    for (std::uint64_t t = 1; t <= ticks; ++t) {
      const std::vector<WalkerInput> inputs = {{static_cast<std::int8_t>(static_cast<int>(t % 3) - 1)}, {static_cast<std::int8_t>(t % 2)}};
      std::vector<std::byte> raw(2);
      inputs[0].to_bytes(std::span<std::byte, 1>(raw.data(), 1));
      inputs[1].to_bytes(std::span<std::byte, 1>(raw.data() + 1, 1));
      log.append(raw);
      REQUIRE(runner.step(inputs).ok());
      hashes.push_back(runner.hash());
      if (const std::optional<std::uint64_t> through = keeper.note_stepped(runner)) {
        forget_ticks.push_back(*through);
        forget_at.push_back(t);
      }
    }
  }
};

}  // namespace

TEST_CASE("an evidence keeper keeps a state every k_tick_window ticks and lets the protocol forget all but the last two") {
  Stepped s(2 * net::k_tick_window + 10);
  CHECK(s.forget_at == std::vector<std::uint64_t>{net::k_tick_window, 2 * net::k_tick_window});
  // The first keeps the configuration's state (tick 0) and the one at the window; the second drops tick 0.
  CHECK(s.forget_ticks == std::vector<std::uint64_t>{0, net::k_tick_window});
}

TEST_CASE("evidence holds this participant's own state at the desync tick and a replay of the agreed inputs") {
  Stepped s(150);
  Result<net::ParticipantEvidence> evidence = s.keeper.evidence({}, 9, s.log, 100, 150);
  REQUIRE(evidence.ok());
  WalkerSim own;
  std::uint64_t tick = 0;
  REQUIRE(decode_snapshot<WalkerSim>(evidence->state, own, tick).ok());
  CHECK(tick == 100);
  CHECK(Runner<WalkerSim>(std::move(own), tick).hash() == s.hashes[100]);
  // The replay re-simulates the agreed inputs from the configuration to the desync, verifying.
  Result<replay::ReplayFile> file = replay::parse_replay(evidence->replay);
  REQUIRE(file.ok());
  Result<replay::Player<WalkerSim>> player = replay::Player<WalkerSim>::open(std::move(file).value(), false);
  REQUIRE(player.ok());
  Result<replay::PlayOutcome> played = player->play_to(100);
  REQUIRE(played.ok());
  CHECK_FALSE(played->desync.has_value());
  CHECK(player->runner().hash() == s.hashes[100]);

  SECTION("a desync older than the ring gives the latest state instead") {
    Stepped long_run(200);
    Result<net::ParticipantEvidence> old = long_run.keeper.evidence({}, 9, long_run.log, 100, 200);
    REQUIRE(old.ok());
    WalkerSim latest;
    REQUIRE(decode_snapshot<WalkerSim>(old->state, latest, tick).ok());
    CHECK(tick == 200);
  }
}

TEST_CASE("an evidence keeper says why it has no evidence of a desync before its earliest state") {
  Stepped s(20);
  net::EvidenceKeeper<WalkerSim> late;
  late.start_from_state(500, {});
  Result<net::ParticipantEvidence> none = late.evidence({}, 9, s.log, 300, 510);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "the desync is at tick 300, before this participant's earliest kept state, of tick 500");
}
