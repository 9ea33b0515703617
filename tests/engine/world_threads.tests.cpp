// The world stepped on several threads: the worker pool itself, every hash the same as on one
// thread (in this process, and in separate processes of the lockstep binary), the golden cases
// and the sync test on two threads, and degenerate states failing the same way on any count.

#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/worker_pool.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/golden.hpp"
#include "lockstep/replay/regular_file.hpp"
#include "allocation_count.hpp"
#include "bot_inputs.hpp"
#include "process.hpp"
#include "test_scale.hpp"

using namespace lockstep;
using lockstep::testing::BotInputs;
using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

/// Every hash of `ticks` bot-played ticks of `config` on `threads` threads, every phase spread
/// over all of them however small (World::set_thread_grain).
std::vector<std::uint64_t> hashes_of(WorldConfig config, std::uint32_t threads, int ticks) {
  config.threads = threads;
  config.thread_grain = 1;
  Result<Runner<World>> runner = Runner<World>::create(config, 7);
  REQUIRE(runner.ok());
  REQUIRE(runner->simulation().threads() == threads);
  BotInputs bots(7, config.players);
  std::vector<std::uint64_t> hashes{runner->hash()};
  for (int t = 0; t < ticks; ++t) {
    Result<std::uint64_t> hash = runner->step(bots.next());
    REQUIRE(hash.ok());
    hashes.push_back(hash.value());
  }
  return hashes;
}

}  // namespace

TEST_CASE("a worker pool runs each job once on every thread, the first on the caller", "[engine][threads]") {
  WorkerPool pool(3);
  REQUIRE(pool.threads() == 3);
  std::vector<std::atomic<int>> runs(3);
  std::atomic<int> on_caller{0};
  const std::thread::id caller = std::this_thread::get_id();
  for (int job = 0; job < 2000; ++job) {
    auto count = [&](std::uint32_t t) {
      runs[t].fetch_add(1);
      if (t == 0 && std::this_thread::get_id() == caller) on_caller.fetch_add(1);
    };
    pool.run(count);
  }
  for (const auto& r : runs) CHECK(r.load() == 2000);
  CHECK(on_caller.load() == 2000);

  CHECK(resolve_thread_count(0) >= 1);
  CHECK(resolve_thread_count(0) == std::min(k_max_threads, std::max(1u, std::thread::hardware_concurrency())));
  CHECK(resolve_thread_count(1000) == k_max_threads);
}

TEST_CASE("a copied world keeps its thread count and steps on threads of its own", "[engine][threads]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 300;
  config.threads = 2;
  config.thread_grain = 1;  // every phase on both threads, however small
  Result<World> world = World::create(config, 3);
  REQUIRE(world.ok());
  World copy = world.value();
  CHECK(copy.threads() == 2);
  const std::vector<ButtonInput> inputs(config.players, ButtonInput{});
  // Both step at once, each on its own pair of threads.
  std::thread other([&] {
    for (int t = 0; t < 60; ++t) REQUIRE(copy.step(inputs).ok());
  });
  for (int t = 0; t < 60; ++t) REQUIRE(world->step(inputs).ok());
  other.join();
  for (std::uint32_t b = 1; b <= world->body_count(); ++b) REQUIRE(world->position(BodyId{b}) == copy.position(BodyId{b}));
}

TEST_CASE("a world stepping on 2 threads allocates nothing per tick once running", "[engine][threads][allocations]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 2000;
  config.threads = 2;
  config.thread_grain = 1;  // every phase on both threads, however small
  Result<World> world = World::create(config, 9);
  REQUIRE(world.ok());
  BotInputs bots(9, config.players);
  int failed = 0;
  auto tick = [&] {  // no assertion inside: Catch may allocate
    failed += world->step(bots.next()).ok() ? 0 : 1;
  };
  for (int t = 0; t < 300; ++t) tick();  // the pool starts, the contact lists grow to the pile
  lockstep::testing::AllocationCount count;
  for (int t = 0; t < 300; ++t) tick();
  const std::uint64_t allocations = count.stop();
  INFO(allocations << " allocations in 300 ticks");
  CHECK(failed == 0);
  CHECK(allocations <= 8);  // a contact list may still double once or twice as the pile settles
}

TEST_CASE("every hash of 1,000 arena ticks is the same on 1, 2, 3 and 4 threads", "[engine][threads][determinism]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 500;
  const std::uint64_t ticks = lockstep::testing::scaled(1000, 400);
  const std::vector<std::uint64_t> one = hashes_of(config, 1, ticks);
  for (std::uint32_t threads : {2u, 3u, 4u}) {
    INFO(threads << " threads");
    const std::vector<std::uint64_t> many = hashes_of(config, threads, ticks);
    REQUIRE(many.size() == one.size());
    for (std::size_t t = 0; t < one.size(); ++t) {
      INFO("tick " << t);
      REQUIRE(many[t] == one[t]);
    }
  }
}

TEST_CASE("worlds with fewer bands than threads, and every scene, step alike on 8 threads",
          "[engine][threads][determinism]") {
  for (Scene scene : {Scene::arena, Scene::ball, Scene::spring}) {
    WorldConfig config = default_world_config(scene);
    // The smallest arena, 1,280 px wide: cells of 14 px in bands of 16 columns make 6 bands, so
    // seams between threads and two idle threads. The ball and spring labs have no grid at all.
    config.arena.bodies = 20;
    INFO(scene_name(scene));
    CHECK(hashes_of(config, 8, 600) == hashes_of(config, 1, 600));
  }
}

TEST_CASE("a restored or assigned state keeps the thread count of the world it goes into", "[engine][threads]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 200;
  config.threads = 3;
  config.thread_grain = 1;
  Result<Runner<World>> runner = Runner<World>::create(config, 5);
  REQUIRE(runner.ok());
  const Snapshot start = runner->save();
  const std::vector<ButtonInput> inputs(config.players, ButtonInput{});
  REQUIRE(runner->step(inputs).ok());
  REQUIRE(runner->restore(start.bytes).ok());
  CHECK(runner->simulation().threads() == 3);

  config.threads = 1;
  Result<World> one = World::create(config, 5);
  Result<World> four = World::create(config, 5);
  REQUIRE((one.ok() && four.ok()));
  four->set_threads(4);
  REQUIRE(one->step(inputs).ok());  // its scratch sized for 1 thread
  four.value() = one.value();
  CHECK(four->threads() == 4);
  REQUIRE(four->step(inputs).ok());
  REQUIRE(one->step(inputs).ok());
  Xxh3Sink sink;
  CHECK(canonical_hash(sink, std::uint64_t{2}, four.value()) == canonical_hash(sink, std::uint64_t{2}, one.value()));
}

TEST_CASE("an exception in one thread of a job reaches the caller after every thread is done", "[engine][threads]") {
  WorkerPool pool(3);
  std::atomic<int> finished{0};
  auto throwing = [&](std::uint32_t t) {
    if (t == 2) throw std::runtime_error("thread 2 failed");
    finished.fetch_add(1);
  };
  CHECK_THROWS_WITH(pool.run(throwing), "thread 2 failed");
  CHECK(finished.load() == 2);
  // The pool goes on serving jobs.
  auto counting = [&](std::uint32_t) { finished.fetch_add(1); };
  pool.run(counting);
  CHECK(finished.load() == 5);
}

TEST_CASE("a world changes its thread count between ticks without a change of hash", "[engine][threads]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 400;
  const std::vector<std::uint64_t> one = hashes_of(config, 1, 200);
  config.thread_grain = 1;
  Result<World> world = World::create(config, 7);
  REQUIRE(world.ok());
  BotInputs bots(7, config.players);
  Xxh3Sink sink;
  for (std::uint64_t t = 1; t <= 200; ++t) {
    if (t % 50 == 0) world->set_threads(static_cast<std::uint32_t>(1 + t / 50));
    REQUIRE(world->step(bots.next()).ok());
    REQUIRE(canonical_hash(sink, t, world.value()) == one[t]);
  }
}

TEST_CASE("the sync test passes on 2 threads", "[engine][threads][sync]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 300;
  config.threads = 2;
  config.thread_grain = 1;  // every phase on both threads, however small
  Result<Runner<World>> runner = Runner<World>::create(config, 11);
  REQUIRE(runner.ok());
  BotInputs bots(11, config.players);
  for (int t = 0; t < 300; ++t) {
    Result<std::uint64_t> hash = runner->step_sync_test(bots.next());
    INFO((hash ? std::string() : hash.error().message));
    REQUIRE(hash.ok());
  }
}

TEST_CASE("the golden cases hold on 2 threads", "[engine][threads][golden]") {
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(LOCKSTEP_GOLDEN_DIR)) {
    if (entry.path().extension() != ".golden") continue;
    Result<std::vector<std::byte>> bytes = replay::read_regular_file(entry.path().string(), replay::k_max_golden_file_bytes);
    REQUIRE(bytes.ok());
    Result<replay::GoldenCase> golden = replay::parse_golden(
        std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), entry.path().stem().string());
    REQUIRE(golden.ok());
    if (golden->config.threads != 1) continue;  // held on its own thread count by regress
    golden->config.threads = 2;
    golden->config.thread_grain = 1;
    // The 1,000-body arena (four fifths of this test's time) is held on 2 threads by the hashes
    // equal on 1 to 4 threads above and by its own 2-thread golden case; the unoptimised build also
    // leaves the arenas of 300 bodies to the optimised one.
    const std::uint32_t max_bodies = lockstep::testing::k_full_size ? 999 : 299;
    if (golden->config.scene == Scene::arena && golden->config.arena.bodies > max_bodies) continue;
    Result<replay::GoldenOutcome> outcome = replay::run_golden(golden.value(), true);
    INFO(entry.path().filename().string());
    REQUIRE(outcome.ok());
    CHECK(outcome->pass);
    ++cases;
  }
  CHECK(cases >= (lockstep::testing::k_full_size ? 4 : 3));
}

TEST_CASE("a crowded state fails with the same message on any thread count", "[engine][threads][hostile]") {
  WorldParams params;
  params.contacts = true;
  params.walls = true;
  params.min_px = {0.0, 0.0};
  params.max_px = {4000.0, 1000.0};
  std::string first;
  for (std::uint32_t threads : {1u, 2u, 3u}) {
    World world(params, 1);
    // A spread of ordinary bodies, and a pile on one point in the third band of the grid.
    for (int i = 0; i < 2000; ++i) world.add_body({{10.0 + 1.9 * i, 20.0 + 0.2 * (i % 50)}, {}, 5.0, 1.0});
    for (int i = 0; i < 3000; ++i) world.add_body({{500.0, 500.0}, {}, 5.0, 1.0});
    world.set_threads(threads);
    world.set_thread_grain(1);
    Status status = world.step(std::vector<ButtonInput>(1));
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.error().message, Catch::Contains("too crowded"));
    if (first.empty()) first = status.error().message;
    CHECK(status.error().message == first);
  }
}

TEST_CASE("every hash of a 300-tick, 10,000-body arena is the same on --threads 1, 2, 3 and 4, "
          "each in its own process, and a replay recorded on 4 threads verifies on 1",
          "[tools][threads][determinism]") {
  TempDir dir;
  std::string reference;
  const std::uint64_t ticks = lockstep::testing::scaled(300, 20);
  for (const char* threads : {"1", "2", "3", "4"}) {
    const std::string log = dir.file(std::string("threads-") + threads + ".log");
    const ProcessResult run = run_process(LOCKSTEP_BINARY, {"run", "--bodies", "10000", "--ticks", std::to_string(ticks),
                                                            "--threads", threads, "--hash-log", log});
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    const std::string hashes = read_file(log);
    REQUIRE(hashes.size() > ticks * 18);
    if (reference.empty()) reference = hashes;
    CHECK(hashes == reference);
  }
  const std::string recorded_ticks = std::to_string(lockstep::testing::scaled(300, 100));
  const ProcessResult recorded = run_process(LOCKSTEP_BINARY, {"run", "--bodies", "2000", "--ticks", recorded_ticks, "--threads", "4",
                                                               "--record", dir.file("four.lsr")});
  REQUIRE(recorded.exit_code == 0);
  const ProcessResult replayed = run_process(LOCKSTEP_BINARY, {"replay", dir.file("four.lsr")});
  INFO(replayed.out << replayed.err);
  CHECK(replayed.exit_code == 0);
  const std::string hash = recorded.last_line().substr(recorded.last_line().rfind(' ') + 1);
  CHECK(replayed.last_line() == "ok " + recorded_ticks + " ticks verified, " + recorded_ticks + " hashes checked, final hash " + hash);
}
