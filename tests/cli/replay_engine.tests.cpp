// The replay engine that the WebAssembly module wraps for the browser page and the npm package
// (cli/detail/replay_engine.hpp), built natively: it verifies with `lockstep replay`'s verdict,
// answers the page as `lockstep view`'s server does, and seeks and steps to the hashes that
// `lockstep run` computes in its own process. The wasm build of the same code is held to these
// by tests/browser/static_page_test.py and tests/tools/npm_package_test.py.

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>

#include "lockstep/cli/cli.hpp"
#include "lockstep/cli/detail/replay_engine.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"

using namespace lockstep;
using lockstep::testing::lockstep_cli;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

using Known = cli::detail::Simulations<World>;

const std::vector<std::string> k_session = {"--bodies", "100", "--seed", "5"};

std::vector<std::string> with_session(std::vector<std::string> args) {
  args.insert(args.begin() + 1, k_session.begin(), k_session.end());
  return args;
}

std::vector<std::byte> frames_request(std::uint64_t from, std::uint16_t count) {
  return cli::view::encode_request(cli::view::FramesRequest{from, count});
}

}  // namespace

TEST_CASE("the browser's replay engine verifies, answers the page, seeks and steps as the command line does",
          "[cli][web]") {
  TempDir dir;
  const std::string path = dir.file("arena.lsr");
  REQUIRE(lockstep_cli(with_session({"run", "--ticks", "240", "--record", path, "--keyframe-every", "60"})).exit_code == 0);
  const ProcessResult replayed = lockstep_cli({"replay", path});
  REQUIRE(replayed.exit_code == 0);
  const std::string run_100 = lockstep_cli(with_session({"run", "--ticks", "100"})).last_line();

  std::unique_ptr<cli::detail::ReplayEngine> engine = cli::detail::open_replay_engine<Known>(path, 256);
  REQUIRE(engine != nullptr);
  CHECK(engine->verify() == cli::k_exit_ok);
  CHECK(engine->tick() == 240);
  CHECK_THAT(replayed.last_line(), Catch::EndsWith("final hash " + hash_hex(engine->hash())));
  const std::string hello = engine->hello_json();
  CHECK_THAT(hello, Catch::StartsWith("{\"type\":\"hello\",\"mode\":\"replay\""));
  CHECK_THAT(hello, Catch::Contains("\"last_tick\":240") && Catch::Contains("\"divergence\":null"));

  REQUIRE(engine->seek(100).ok());
  CHECK("tick 100 hash " + hash_hex(engine->hash()) == run_100);
  CHECK(engine->recorded_hash() == engine->hash());
  REQUIRE(engine->step().ok());
  CHECK(engine->tick() == 101);
  const std::vector<replay::Field> fields = engine->fields();
  REQUIRE(!fields.empty());
  CHECK(fields.front().path == "tick");
  CHECK(fields.front().value == "101");
  CHECK(std::any_of(fields.begin(), fields.end(), [](const replay::Field& f) { return f.path == "state.pos_x[0]"; }));

  cli::view::FrameBatchWriter batch;
  std::string text;
  REQUIRE(engine->answer(frames_request(100, 3), batch, text));
  Result<cli::view::FrameBatch> decoded = cli::view::decode_frame_batch(batch.bytes());
  REQUIRE(decoded.ok());
  REQUIRE(decoded->frames.size() == 3);
  CHECK(decoded->frames[0].tick == 100);
  CHECK("tick 100 hash " + hash_hex(decoded->frames[0].worlds.at(0).hash) == run_100);

  CHECK_FALSE(engine->answer(cli::view::encode_request(cli::view::KeysRequest{1}), batch, text));
  CHECK(text == "{\"type\":\"error\",\"message\":\"keys play a live session (lockstep play), not a replay\"}");
  const std::vector<std::byte> garbage(5, std::byte{0xff});
  CHECK_FALSE(engine->answer(garbage, batch, text));
  CHECK_THAT(text, Catch::StartsWith("{\"type\":\"error\",\"message\":"));
  CHECK_FALSE(engine->answer(frames_request(241, 1), batch, text));
  CHECK_THAT(text, Catch::Contains("outside the view"));

  CHECK_FALSE(engine->seek(241).ok());
  REQUIRE(engine->seek(240).ok());
  const Status past = engine->step();
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message == "tick 241 is past the replay's last tick 240");
}

TEST_CASE("the browser's replay engine refuses a bad file with the command line's error", "[cli][web]") {
  TempDir dir;
  const std::string path = dir.file("bad.lsr");
  std::ofstream(path, std::ios::binary) << "not a replay at all";
  const ProcessResult replayed = lockstep_cli({"replay", path});
  REQUIRE(replayed.exit_code == cli::k_exit_usage);
  try {
    (void)cli::detail::open_replay_engine<Known>(path, 256);
    FAIL("a bad file opened");
  } catch (const cli::CommandError& e) {
    CHECK("error: " + e.message + "\n" == replayed.err);
  }
}

TEST_CASE("the browser's replay engine names a divergence as replay does and steps on from it", "[cli][web]") {
  TempDir dir;
  const std::string path = dir.file("diverges.lsr");
  // Recorded by a build that simulates differently from tick 120 (tests/tools/nudged_world_main.cpp).
  REQUIRE(run_process(NUDGED_WORLD_BINARY, with_session({"run", "--ticks", "240", "--record", path, "--keyframe-every", "60"}),
                      {"LOCKSTEP_TEST_NUDGE=@120:3:contacts"})
              .exit_code == 0);
  const ProcessResult replayed = lockstep_cli({"replay", path});
  REQUIRE(replayed.exit_code == cli::k_exit_failed);
  REQUIRE_THAT(replayed.last_line(), Catch::StartsWith("desync at tick 120: "));

  std::unique_ptr<cli::detail::ReplayEngine> engine = cli::detail::open_replay_engine<Known>(path, 256);
  CHECK(engine->verify() == cli::k_exit_failed);
  CHECK(engine->tick() == 120);
  CHECK_THAT(engine->hello_json(), Catch::Contains("\"divergence\":{\"tick\":120"));
  // A step goes on from the divergent state (it never jumps to a keyframe of the recording)...
  const Status stepped = engine->step();
  REQUIRE_FALSE(stepped.ok());
  CHECK_THAT(stepped.error().message, Catch::StartsWith("desync at tick 121: "));
  CHECK(engine->tick() == 121);
  // ...and a seek starts from the recording's keyframe, as replay --from-tick does.
  REQUIRE(engine->seek(180).ok());
  CHECK(engine->recorded_hash() == engine->hash());
}
