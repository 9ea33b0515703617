// The predicted state on its own (net/prediction.hpp): it steps exactly as the confirmed runner
// does with the same inputs, knows itself wrong from the first confirmed tick that differs, and a
// rollback of the 1,000-body arena (restore and re-simulate) allocates nothing once warm; and the
// input latency's percentiles.

#include <catch2/catch.hpp>

#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/session/prediction.hpp"
#include "allocation_count.hpp"
#include "bot_inputs.hpp"
#include "test_scale.hpp"

using namespace lockstep;
using lockstep::testing::BotInputs;
using net::Prediction;

namespace {

std::vector<std::byte> bytes_of(std::span<const ButtonInput> inputs) {
  std::vector<std::byte> out(inputs.size() * ButtonInput::k_bytes);
  for (std::size_t p = 0; p < inputs.size(); ++p) {
    inputs[p].to_bytes(std::span<std::byte, ButtonInput::k_bytes>(out.data() + p * ButtonInput::k_bytes, ButtonInput::k_bytes));
  }
  return out;
}

}  // namespace

TEST_CASE("a prediction steps as the confirmed runner does and is wrong from the first tick whose inputs differ",
          "[net][prediction]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 60;
  Result<Runner<World>> confirmed = Runner<World>::create(config, 4);
  REQUIRE(confirmed.ok());
  BotInputs bots(4, config.players);
  std::vector<std::vector<ButtonInput>> inputs;
  for (int t = 0; t < 10; ++t) {
    const std::span<const ButtonInput> next = bots.next();
    inputs.emplace_back(next.begin(), next.end());
  }
  Prediction<World> prediction;
  prediction.reset(config.players);
  CHECK_FALSE(prediction.usable(0));
  prediction.restart(confirmed->simulation(), 0);
  World previous;
  for (std::size_t t = 0; t < 6; ++t) {
    std::copy(inputs[t].begin(), inputs[t].end(), prediction.next_inputs().begin());
    REQUIRE(prediction.step_next(&previous).ok());
  }
  CHECK(prediction.tick() == 6);
  // Confirmed with the same inputs: still right, and the same state at every tick.
  for (std::size_t t = 0; t < 4; ++t) {
    REQUIRE(confirmed->step(inputs[t]).ok());
    prediction.confirm(t + 1, bytes_of(inputs[t]));
  }
  CHECK(prediction.usable(4));
  CHECK(prediction.wrong_at() == 0);
  Runner<World> check(prediction.state(), 6);
  REQUIRE(confirmed->step(inputs[4]).ok());
  const World fifth = confirmed->simulation();
  REQUIRE(confirmed->step(inputs[5]).ok());
  CHECK(check.hash() == confirmed->hash());
  CHECK(Runner<World>(previous, 5).hash() == Runner<World>(fifth, 5).hash());
  // Tick 5 confirmed with another input than predicted: wrong from there.
  Prediction<World> again;
  again.reset(config.players);
  Result<Runner<World>> start = Runner<World>::create(config, 4);
  again.restart(start->simulation(), 0);
  for (std::size_t t = 0; t < 6; ++t) {
    std::copy(inputs[t].begin(), inputs[t].end(), again.next_inputs().begin());
    REQUIRE(again.step_next(nullptr).ok());
  }
  std::vector<ButtonInput> other = inputs[4];
  other[1].buttons ^= ButtonInput::k_action;  // player 1 pressed action after all
  for (std::size_t t = 0; t < 4; ++t) again.confirm(t + 1, bytes_of(inputs[t]));
  again.confirm(5, bytes_of(other));
  CHECK_FALSE(again.usable(5));
  CHECK(again.wrong_at() == 5);
  again.confirm(6, bytes_of(inputs[5]));  // later ticks change nothing once wrong
  CHECK(again.wrong_at() == 5);
}

TEST_CASE("rolling back the 1,000-body arena and re-simulating eight ticks allocates nothing once warm",
          "[net][prediction][allocations]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = static_cast<std::uint32_t>(lockstep::testing::scaled(1000, 300));
  Result<Runner<World>> confirmed = Runner<World>::create(config, 9);
  REQUIRE(confirmed.ok());
  BotInputs bots(9, config.players);
  Prediction<World> prediction;
  prediction.reset(config.players);
  World previous;
  int failed = 0;
  // Each round: the confirmed state steps a tick, the prediction is rebuilt from it and carried
  // eight ticks ahead (a rollback of eight), its last step copying the state before it.
  const auto round = [&] {  // no assertion inside: Catch may allocate
    failed += confirmed->step(bots.next()).ok() ? 0 : 1;
    prediction.restart(confirmed->simulation(), confirmed->tick());
    for (int t = 0; t < 8; ++t) {
      const std::span<const ButtonInput> guess = bots.next();
      std::copy(guess.begin(), guess.end(), prediction.next_inputs().begin());
      failed += prediction.step_next(t == 7 ? &previous : nullptr).ok() ? 0 : 1;
    }
  };
  for (int r = 0; r < 200; ++r) round();  // the contact lists grow to the pile, in both copies
  lockstep::testing::AllocationCount count;
  for (int r = 0; r < 60; ++r) round();
  const std::uint64_t allocations = count.stop();
  INFO(allocations << " allocations in 60 rollbacks of 8 ticks");
  CHECK(failed == 0);
  CHECK(allocations <= 8);  // as a world stepping alone: a contact list may still double as the pile settles
}

TEST_CASE("input latency percentiles are exact in whole ticks", "[net][prediction]") {
  net::InputLatency latency;
  CHECK_FALSE(latency.percentile(0.5).has_value());
  for (int i = 0; i < 98; ++i) latency.add(1);
  latency.add(2);
  latency.add(40);
  CHECK(latency.count() == 100);
  CHECK(latency.percentile(0.5) == std::optional<std::uint64_t>(1));
  CHECK(latency.percentile(0.98) == std::optional<std::uint64_t>(1));
  CHECK(latency.percentile(0.99) == std::optional<std::uint64_t>(2));
  CHECK(latency.percentile(1.0) == std::optional<std::uint64_t>(40));
  latency.add(100'000);  // past the histogram: counted as its last bucket
  CHECK(latency.percentile(1.0) == std::optional<std::uint64_t>(net::InputLatency::k_max_ticks));
}
