#include <catch2/catch.hpp>

#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "walker_sim.hpp"

using namespace lockstep;

namespace {

WorldConfig small_arena() {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 300;
  return config;
}

std::vector<ButtonInput> bot_inputs(std::vector<Bot>& bots) {
  std::vector<ButtonInput> inputs;
  for (Bot& bot : bots) inputs.push_back(bot.next());
  return inputs;
}

}  // namespace

TEST_CASE("restore then continue gives the hashes of the run that never stopped",
          "[engine][snapshot]") {
  for (Scene scene : {Scene::arena, Scene::ball, Scene::spring}) {
    WorldConfig config = scene == Scene::arena ? small_arena() : default_world_config(scene);
    Result<Runner<World>> straight = Runner<World>::create(config, 11);
    REQUIRE(straight.ok());
    std::vector<Bot> bots;
    for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(11, p);
    std::vector<std::vector<ButtonInput>> inputs;
    for (int t = 0; t < 240; ++t) inputs.push_back(bot_inputs(bots));

    std::vector<std::uint64_t> hashes;
    Snapshot at_100;
    for (int t = 0; t < 240; ++t) {
      hashes.push_back(straight->step(inputs[static_cast<std::size_t>(t)]).value());
      if (straight->tick() == 100) at_100 = straight->save();
    }

    // A different runner, built from another seed, takes the snapshot and must continue exactly.
    Result<Runner<World>> resumed = Runner<World>::create(config, 999);
    REQUIRE(resumed.ok());
    REQUIRE(resumed->restore(at_100.bytes).ok());
    CHECK(resumed->tick() == 100);
    CHECK(resumed->hash() == hashes[99]);
    for (int t = 100; t < 240; ++t) {
      INFO("scene " << scene_name(scene) << " tick " << t + 1);
      REQUIRE(resumed->step(inputs[static_cast<std::size_t>(t)]).value() ==
              hashes[static_cast<std::size_t>(t)]);
    }
  }
}

TEST_CASE("a snapshot round-trips to identical bytes", "[engine][snapshot]") {
  Result<Runner<World>> runner = Runner<World>::create(small_arena(), 5);
  REQUIRE(runner.ok());
  const Snapshot first = runner->save();
  REQUIRE(runner->restore(first.bytes).ok());
  CHECK(runner->save().bytes == first.bytes);
}

TEST_CASE("a rejected snapshot leaves the runner exactly as it was", "[engine][snapshot]") {
  Result<Runner<World>> runner = Runner<World>::create(small_arena(), 5);
  REQUIRE(runner.ok());
  const std::vector<ButtonInput> idle(4);
  REQUIRE(runner->step(idle).ok());
  const Snapshot good = runner->save();
  const std::uint64_t hash = runner->hash();

  auto rejected = [&](std::vector<std::byte> bytes) {
    Status status = runner->restore(bytes);
    CHECK(runner->hash() == hash);
    CHECK(runner->tick() == 1);
    CHECK(runner->save().bytes == good.bytes);
    return !status.ok() ? status.error().message : std::string("accepted");
  };

  SECTION("every truncation") {
    for (std::size_t size = 0; size < good.bytes.size(); size += 1 + size / 64) {
      std::vector<std::byte> cut(good.bytes.begin(), good.bytes.begin() + static_cast<long>(size));
      INFO("size " << size);
      CHECK(rejected(cut) != "accepted");
    }
  }
  SECTION("wrong magic") {
    std::vector<std::byte> bytes = good.bytes;
    bytes[0] = std::byte{'X'};
    CHECK(rejected(bytes) == "not a lockstep snapshot");
  }
  SECTION("newer version") {
    std::vector<std::byte> bytes = good.bytes;
    bytes[4] = std::byte{99};
    CHECK_THAT(rejected(bytes), Catch::Contains("version 99"));
  }
  SECTION("trailing bytes") {
    std::vector<std::byte> bytes = good.bytes;
    bytes.push_back(std::byte{0});
    CHECK_THAT(rejected(bytes), Catch::Contains("unexpected bytes"));
  }
  SECTION("an array length far beyond its bound allocates nothing") {
    // The first array is player_body, right after the params: find its count (4) and inflate it.
    std::vector<std::byte> bytes = good.bytes;
    const std::size_t params_bytes = 4 + 4 + 1 + 8 * 5 + 1 + 1 + 8 * 4;
    const std::size_t count_at = k_snapshot_header_bytes + 8 + params_bytes;
    REQUIRE(std::to_integer<int>(bytes[count_at]) == 4);
    bytes[count_at + 7] = std::byte{0x7F};
    CHECK_THAT(rejected(bytes), Catch::Contains("exceeds its bound"));
  }
  SECTION("a body array that claims more than the bytes hold") {
    std::vector<std::byte> bytes = good.bytes;
    const std::size_t params_bytes = 4 + 4 + 1 + 8 * 5 + 1 + 1 + 8 * 4;
    const std::size_t pos_x_count_at = k_snapshot_header_bytes + 8 + params_bytes + 8 + 4 * 4;
    bytes[pos_x_count_at + 2] = std::byte{0x0F};  // about a million bodies, within the bound
    CHECK_THAT(rejected(bytes), Catch::Contains("runs past the end"));
  }
  SECTION("a state that decodes but breaks an invariant") {
    std::vector<std::byte> bytes = good.bytes;
    const std::size_t params_bytes = 4 + 4 + 1 + 8 * 5 + 1 + 1 + 8 * 4;
    const std::size_t player_body_at = k_snapshot_header_bytes + 8 + params_bytes + 8;
    bytes[player_body_at + 3] = std::byte{0x70};  // player 0's body index far out of range
    CHECK_THAT(rejected(bytes), Catch::Contains("snapshot is invalid"));
  }
}

TEST_CASE("snapshots and the runner are generic over the Simulation concept",
          "[engine][snapshot][generic]") {
  using testing::WalkerInput;
  using testing::WalkerSim;
  Result<Runner<WalkerSim>> a = Runner<WalkerSim>::create({3, 101}, 42);
  REQUIRE(a.ok());
  std::vector<WalkerInput> inputs = {{1}, {-1}, {0}};
  for (int t = 0; t < 50; ++t) REQUIRE(a->step_sync_test(inputs).ok());
  const Snapshot mid = a->save();
  std::vector<std::uint64_t> later;
  for (int t = 0; t < 50; ++t) later.push_back(a->step(inputs).value());

  Result<Runner<WalkerSim>> b = Runner<WalkerSim>::create({3, 101}, 1);
  REQUIRE(b.ok());
  REQUIRE(b->restore(mid.bytes).ok());
  for (int t = 0; t < 50; ++t) CHECK(b->step(inputs).value() == later[static_cast<std::size_t>(t)]);
  CHECK(b->simulation().position(0) == a->simulation().position(0));
}
