#include <catch2/catch.hpp>

#include <vector>

#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/recorder.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "process.hpp"
#include "sessions.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using namespace lockstep::replay;
using lockstep::testing::record_session;
using lockstep::testing::small_arena;
using lockstep::testing::TempDir;

namespace {

Player<World> open_player(const std::string& path, bool force = false) {
  Result<ReplayFile> file = read_replay_file(path);
  REQUIRE(file.ok());
  Result<Player<World>> player = Player<World>::open(std::move(file).value(), force);
  REQUIRE(player.ok());
  return std::move(player).value();
}

}  // namespace

TEST_CASE("playback reproduces every recorded hash", "[replay][player]") {
  TempDir dir;
  const std::uint64_t final_hash = record_session(dir.file("a.lsr"), small_arena(), 3, 400, {1, 100});
  Player<World> player = open_player(dir.file("a.lsr"));
  CHECK_FALSE(player.check_start().has_value());
  Result<PlayOutcome> outcome = player.play_to(400);
  REQUIRE(outcome.ok());
  CHECK_FALSE(outcome->desync.has_value());
  CHECK(outcome->ticks_stepped == 400);
  CHECK(outcome->hashes_checked == 400);
  CHECK(player.runner().hash() == final_hash);
}

TEST_CASE("seeking to any tick gives the state of playing there from the start",
          "[replay][player][seek]") {
  TempDir dir;
  record_session(dir.file("a.lsr"), small_arena(), 4, 1000, {10, 250});
  Player<World> straight = open_player(dir.file("a.lsr"));
  std::vector<std::uint64_t> hashes = {straight.runner().hash()};
  for (std::uint64_t t = 1; t <= 1000; ++t) {
    REQUIRE(straight.step().ok());
    hashes.push_back(straight.runner().hash());
  }
  Player<World> seeker = open_player(dir.file("a.lsr"));
  for (std::uint64_t target : {999u, 17u, 250u, 251u, 600u, 0u, 1000u, 500u, 499u}) {
    Result<PlayOutcome> outcome = seeker.seek(target);
    REQUIRE(outcome.ok());
    REQUIRE_FALSE(outcome->desync.has_value());
    INFO("seek to " << target);
    CHECK(seeker.tick() == target);
    CHECK(seeker.runner().hash() == hashes[target]);
  }
}

TEST_CASE("seeking uses the nearest keyframe, and remembers where it has been",
          "[replay][player][seek]") {
  TempDir dir;
  record_session(dir.file("a.lsr"), small_arena(), 4, 2000, {1, 1000});
  Player<World> player = open_player(dir.file("a.lsr"));
  Result<PlayOutcome> to_1500 = player.seek(1500);
  REQUIRE(to_1500.ok());
  CHECK(to_1500->ticks_stepped == 500);  // from the keyframe at 1000
  Result<PlayOutcome> to_1900 = player.seek(1900);
  CHECK(to_1900->ticks_stepped == 400);  // onwards from where it stands
  Result<PlayOutcome> back_to_700 = player.seek(700);
  CHECK(back_to_700->ticks_stepped == 700);  // nothing before 1000 seen yet: from the start
  Result<PlayOutcome> back_to_1300 = player.seek(1300);
  CHECK(back_to_1300->ticks_stepped == 100);  // from the snapshot remembered at 1200
  CHECK(player.remembered() >= 3);
}

TEST_CASE("a session recorded from mid-way starts from its snapshot", "[replay][player]") {
  TempDir dir;
  const WorldConfig config = small_arena();
  Result<Runner<World>> runner = Runner<World>::create(config, 8);
  std::vector<Bot> bots = {Bot(8, 0), Bot(8, 1), Bot(8, 2), Bot(8, 3)};
  std::vector<ButtonInput> inputs(4);
  auto step = [&] {
    for (std::size_t p = 0; p < 4; ++p) inputs[p] = bots[p].next();
    REQUIRE(runner->step(inputs).ok());
  };
  for (int t = 0; t < 150; ++t) step();
  Result<Recorder<World>> recorder = Recorder<World>::create(dir.file("mid.lsr"), config, 8, runner.value(), {1, 0});
  REQUIRE(recorder.ok());
  for (int t = 0; t < 100; ++t) {
    step();
    REQUIRE(recorder->record(runner.value(), inputs).ok());
  }
  REQUIRE(recorder->finish().ok());
  Player<World> player = open_player(dir.file("mid.lsr"));
  CHECK(player.start_tick() == 150);
  CHECK(player.last_tick() == 250);
  Result<PlayOutcome> outcome = player.play_to(250);
  REQUIRE(outcome.ok());
  CHECK_FALSE(outcome->desync.has_value());
  CHECK(player.runner().hash() == runner->hash());
}

TEST_CASE("a replay from a build that simulates differently is refused unless forced",
          "[replay][player]") {
  TempDir dir;
  record_session(dir.file("a.lsr"), small_arena(), 3, 30, {1, 0});
  Result<ReplayFile> file = read_replay_file(dir.file("a.lsr"));
  REQUIRE(file.ok());
  file->header.compatibility_id ^= 1;
  Result<Player<World>> refused = Player<World>::open(file.value(), false);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("compatibility id") && Catch::Contains("--force"));
  CHECK(Player<World>::open(file.value(), true).ok());
}

TEST_CASE("a recorded hash that re-simulation does not reproduce is a desync at its tick",
          "[replay][player][desync]") {
  // Perturb the recording session at tick 77: the file's inputs are unchanged, so playback
  // (which never sees the perturbation) disagrees from tick 77 on.
  TempDir dir;
  record_session(dir.file("a.lsr"), small_arena(), 3, 200, {1, 50},
                 [](std::uint64_t tick, std::vector<ButtonInput>&, Runner<World>& runner) {
                   if (tick == 77) runner.simulation_for_update().set_velocity(BodyId{9}, {1.0, 2.0});
                 });
  Player<World> player = open_player(dir.file("a.lsr"));
  Result<PlayOutcome> outcome = player.play_to(200);
  REQUIRE(outcome.ok());
  REQUIRE(outcome->desync.has_value());
  CHECK(outcome->desync->tick == 77);
  CHECK(outcome->desync->expected != outcome->desync->actual);

  SECTION("diffing the file against its own recording names the perturbed body") {
    Player<World> again = open_player(dir.file("a.lsr"));
    Result<DiffResult> diff = diff_against_recording(again);
    REQUIRE(diff.ok());
    CHECK_FALSE(diff->identical);
    CHECK(diff->divergence_tick == 77);
    CHECK(diff->report_tick == 100);  // the first keyframe after the divergence
    REQUIRE_FALSE(diff->fields.empty());
    bool names_body_9 = false;
    for (const FieldDifference& f : diff->fields) names_body_9 |= World::describe_field(f.path) == "body 9";
    CHECK(names_body_9);
  }
}

TEST_CASE("two replays diverge where their inputs do, and the report names the player's body",
          "[replay][diff]") {
  TempDir dir;
  record_session(dir.file("a.lsr"), small_arena(), 6, 300, {1, 0});
  record_session(dir.file("b.lsr"), small_arena(), 6, 300, {1, 0},
                 [](std::uint64_t tick, std::vector<ButtonInput>& inputs, Runner<World>&) {
                   if (tick == 123) inputs[2] = ButtonInput{static_cast<std::uint16_t>(inputs[2].buttons ^ ButtonInput::k_left)};
                 });
  record_session(dir.file("c.lsr"), small_arena(), 6, 250, {10, 0});
  Player<World> a = open_player(dir.file("a.lsr"));
  Player<World> b = open_player(dir.file("b.lsr"));
  Result<DiffResult> diff = diff_replays(a, b);
  REQUIRE(diff.ok());
  CHECK_FALSE(diff->identical);
  CHECK(diff->divergence_tick == 123);
  const std::string player_2_body = "body " + std::to_string(a.runner().simulation().player_body(2).value);
  bool names_it = false;
  for (const FieldDifference& f : diff->fields) {
    names_it |= World::describe_field(f.path) == player_2_body;
    CHECK(f.path != "tick");
  }
  CHECK(names_it);

  Player<World> a2 = open_player(dir.file("a.lsr"));
  Player<World> c = open_player(dir.file("c.lsr"));
  Result<DiffResult> same = diff_replays(a2, c);
  REQUIRE(same.ok());
  CHECK(same->identical);
  CHECK(same->through_tick == 250);
}

TEST_CASE("the recorder and player work for any Simulation", "[replay][generic]") {
  using lockstep::testing::WalkerInput;
  using lockstep::testing::WalkerSim;
  TempDir dir;
  const lockstep::testing::WalkerConfig config{3, 97};
  Result<Runner<WalkerSim>> runner = Runner<WalkerSim>::create(config, 11);
  Result<Recorder<WalkerSim>> recorder = Recorder<WalkerSim>::create(dir.file("w.lsr"), config, 11, runner.value(), {1, 40});
  REQUIRE(recorder.ok());
  Rng rng(5);
  std::vector<WalkerInput> inputs(3);
  for (int t = 0; t < 200; ++t) {
    for (WalkerInput& in : inputs) in.step = static_cast<std::int8_t>(static_cast<int>(rng.below(3)) - 1);
    REQUIRE(runner->step(inputs).ok());
    REQUIRE(recorder->record(runner.value(), inputs).ok());
  }
  REQUIRE(recorder->finish().ok());
  Result<ReplayFile> file = read_replay_file(dir.file("w.lsr"));
  REQUIRE(file.ok());
  CHECK(file->header.input_layout == WalkerInput::k_layout);
  Result<Player<WalkerSim>> player = Player<WalkerSim>::open(file.value(), false);
  REQUIRE(player.ok());
  Result<PlayOutcome> to_150 = player->seek(150);
  REQUIRE(to_150.ok());
  CHECK(to_150->ticks_stepped == 30);  // from the keyframe at 120
  Result<PlayOutcome> outcome = player->play_to(200);
  REQUIRE(outcome.ok());
  CHECK_FALSE(outcome->desync.has_value());
  CHECK(player->runner().hash() == runner->hash());
  // The world's player refuses a walker replay by name.
  Result<Player<World>> wrong = Player<World>::open(file.value(), true);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.error().message, Catch::Contains("lockstep.test.walkers"));
}
