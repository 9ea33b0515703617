// PredictedPresent alone (net/session/predicted_present.hpp): without prediction the present is
// the confirmed tick and its state the runner's; with prediction it runs ahead with this player's
// own inputs and the others' last confirmed ones, is carried on while right, rolled back from the
// confirmed state (and counted) when a confirmed tick differs, and the window shrinks only as the
// confirmed tick comes within it. Each predicted state is compared with a runner stepped by hand.

#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/session/predicted_present.hpp"

using namespace lockstep;
using net::PredictedPresent;
using net::TickLog;

namespace {

constexpr std::uint32_t k_own = 0;

WorldConfig small_arena() {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 40;
  return config;
}

std::vector<std::byte> bytes_of(const std::vector<ButtonInput>& inputs) {
  std::vector<std::byte> out(inputs.size() * ButtonInput::k_bytes);
  for (std::size_t p = 0; p < inputs.size(); ++p) {
    inputs[p].to_bytes(std::span<std::byte, ButtonInput::k_bytes>(out.data() + p * ButtonInput::k_bytes, ButtonInput::k_bytes));
  }
  return out;
}

std::uint64_t hash_of(const World& world) { return Runner<World>(world, 0).hash(); }

/// Own inputs pressing `up` on even ticks; the others as given.
ButtonInput own_input(std::uint64_t tick) { return ButtonInput{tick % 2 == 0 ? ButtonInput::k_up : std::uint16_t{0}}; }

struct Rig {
  WorldConfig config = small_arena();
  Runner<World> confirmed = Runner<World>::create(config, 7).value();
  TickLog log{config.players, static_cast<std::uint32_t>(ButtonInput::k_bytes)};
  PredictedPresent<World> present;
  std::uint64_t timed_steps = 0;

  explicit Rig(std::uint32_t window) {
    present.restart(confirmed, window);
    for (std::uint64_t t = 1; t <= 20; ++t) present.add_local(t, own_input(t), t);
  }
  /// Every player's confirmed input of `tick`: own as given, the others `others`.
  std::vector<ButtonInput> inputs(std::uint64_t tick, std::uint16_t others) const {
    std::vector<ButtonInput> in(config.players, ButtonInput{others});
    in[k_own] = own_input(tick);
    return in;
  }
  /// The confirmed runner steps its next tick with `in` (as a session does).
  void confirm(const std::vector<ButtonInput>& in) {
    const std::uint64_t next = confirmed.tick() + 1;
    const std::vector<std::byte> raw = bytes_of(in);
    log.append(raw);
    present.before_confirmed(next, confirmed.simulation());
    REQUIRE(confirmed.step(in).ok());
    present.confirm(next, raw);
    present.reach(next);
  }
  void bring() {
    const auto timed = [this](auto&& step) {
      ++timed_steps;
      return step();
    };
    REQUIRE(present.bring_to_present(confirmed, log, k_own, timed).ok());
  }
  /// The hash of the state at `present`: the confirmed state stepped on with own inputs and the
  /// others repeating their input of the last confirmed tick (`others`).
  std::uint64_t expected_hash(std::uint64_t to, std::uint16_t others) const {
    Runner<World> copy(confirmed.simulation(), confirmed.tick());
    while (copy.tick() < to) REQUIRE(copy.step(inputs(copy.tick() + 1, others)).ok());
    return hash_of(copy.simulation());
  }
};

}  // namespace

TEST_CASE("without prediction the present is the confirmed tick, and the state before it is kept for blending") {
  Rig rig(0);
  const std::uint64_t at_zero = hash_of(rig.confirmed.simulation());
  CHECK(&rig.present.state(rig.confirmed) == &rig.confirmed.simulation());
  CHECK(&rig.present.previous_state(rig.confirmed) == &rig.confirmed.simulation());  // nothing shown yet
  rig.confirm(rig.inputs(1, 0));
  CHECK(rig.present.present() == 1);
  CHECK(&rig.present.state(rig.confirmed) == &rig.confirmed.simulation());
  CHECK(hash_of(rig.present.previous_state(rig.confirmed)) == at_zero);
  CHECK_FALSE(rig.present.stale(rig.confirmed.tick()));
}

TEST_CASE("a prediction carries on while right and is rolled back from the confirmed state when a tick differs") {
  Rig rig(8);
  for (int i = 0; i < 4; ++i) rig.present.advance(rig.confirmed.tick());
  REQUIRE(rig.present.stale(0));
  rig.bring();
  CHECK(rig.timed_steps == 4);
  CHECK(hash_of(rig.present.state(rig.confirmed)) == rig.expected_hash(4, 0));
  // Tick 1 confirmed as predicted: still right, nothing to step again.
  rig.confirm(rig.inputs(1, 0));
  CHECK_FALSE(rig.present.stale(1));
  // Tick 2 confirmed with another player pressing `left`: wrong from tick 2.
  rig.confirm(rig.inputs(2, ButtonInput::k_left));
  CHECK(rig.present.stale(2));
  rig.bring();
  CHECK(rig.timed_steps == 6);  // ticks 3 and 4 stepped again
  CHECK(rig.present.corrected_from() == 2);
  // The others now repeat their last confirmed input (left) in ticks 3 and 4.
  CHECK(hash_of(rig.present.state(rig.confirmed)) == rig.expected_hash(4, ButtonInput::k_left));
  net::NetStats stats;
  rig.present.add_to(stats);
  CHECK(stats.rollbacks == 1);
  CHECK(stats.resimulated_ticks == 2);
  CHECK(stats.resimulated_max == 2);
  CHECK(stats.prediction_max == 4);
}

TEST_CASE("a forced rollback rebuilds a right prediction, and is counted from the tick after the confirmed one") {
  Rig rig(8);
  for (int i = 0; i < 3; ++i) rig.present.advance(0);
  rig.bring();
  rig.present.set_force_rollback(true);
  rig.present.arm_forced_rollback();
  CHECK(rig.present.stale(0));
  rig.bring();
  CHECK(rig.timed_steps == 6);
  CHECK(rig.present.corrected_from() == 1);
  CHECK_FALSE(rig.present.stale(0));
}

TEST_CASE("a smaller window takes effect only as the confirmed tick comes within it") {
  Rig rig(8);
  CHECK(rig.present.window() == 8);
  for (int i = 0; i < 5; ++i) rig.present.advance(0);
  rig.present.fit_window(2, 0);
  CHECK(rig.present.window() == 5);  // the present is 5 ahead: not cut short
  rig.present.fit_window(2, 4);
  CHECK(rig.present.window() == 2);
  rig.present.fit_window(6, 4);
  CHECK(rig.present.window() == 6);  // and grows back when the steps fit again
  // A restart keeps a smaller window, and never one larger than the host's.
  rig.present.restart(rig.confirmed, 4);
  CHECK(rig.present.window() == 4);
}

TEST_CASE("each own input's latency is counted once, when the present first reaches its tick") {
  Rig rig(0);
  rig.confirm(rig.inputs(1, 0));  // sampled at clock tick 1
  rig.present.note_shown(3);
  rig.present.note_shown(9);  // the same present again: not counted twice
  rig.confirm(rig.inputs(2, 0));
  rig.present.note_shown(6);
  net::NetStats stats;
  rig.present.add_to(stats);
  CHECK(stats.input_latency_p50_ticks == 2u);
  CHECK(stats.input_latency_p99_ticks == 4u);
}

TEST_CASE("a tick whose input the host decided for this player is not counted as its own input shown") {
  Rig rig(0);
  // Tick 1 stepped with this player's own input; tick 2 with another, decided by the host (the
  // input tolerance), so its own input of tick 2 never showed; tick 3 with its own again.
  const auto confirm_and_show = [&](std::vector<ButtonInput> in, std::uint64_t clock) {
    std::vector<std::byte> own(ButtonInput::k_bytes);
    in[k_own].to_bytes(std::span<std::byte, ButtonInput::k_bytes>(own.data(), ButtonInput::k_bytes));
    rig.present.note_confirmed_own(rig.confirmed.tick() + 1, own);
    rig.confirm(in);
    rig.present.note_shown(clock);
  };
  confirm_and_show(rig.inputs(1, 0), 3);
  std::vector<ButtonInput> decided = rig.inputs(2, 0);
  decided[k_own] = own_input(1);  // its latest, as the host decides it (tick 2's own differs)
  confirm_and_show(decided, 40);
  confirm_and_show(rig.inputs(3, 0), 5);
  net::NetStats stats;
  rig.present.add_to(stats);
  // Latencies 2 and 2: the decided tick's 38 is not among them.
  CHECK(stats.input_latency_p50_ticks == 2u);
  CHECK(stats.input_latency_p99_ticks == 2u);
}
