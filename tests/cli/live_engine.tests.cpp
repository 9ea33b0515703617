// The live engine that the WebAssembly module wraps for the static page's `?live=URL`
// (cli/detail/live_engine.hpp), and the pace both it and `spectate URL` keep
// (cli/detail/broadcast_pace.hpp), built natively. The wasm build of the same code follows a real
// host's broadcast through nginx in tests/browser/live_page_test.py.

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "broadcasts.hpp"
#include "lockstep/cli/cli.hpp"
#include "lockstep/cli/detail/broadcast_pace.hpp"
#include "lockstep/cli/detail/live_engine.hpp"

using namespace lockstep;
using lockstep::testing::broadcast_session;
using lockstep::testing::read_manifest;
using lockstep::testing::segment;
using lockstep::testing::TempDir;
using cli::detail::BroadcastPace;
using cli::detail::LiveEngine;

namespace {

using Known = cli::detail::Simulations<World>;

/// The tick of a one-frame batch's frame (view_protocol.hpp: kind, worlds, players, input
/// bytes, count, then the frame's tick).
std::uint64_t frame_tick(const std::vector<std::byte>& batch) {
  REQUIRE(batch.size() >= 18);
  std::uint64_t tick = 0;
  for (int i = 7; i >= 0; --i) tick = (tick << 8) | std::to_integer<std::uint64_t>(batch[10 + static_cast<std::size_t>(i)]);
  return tick;
}

/// Appends every segment after `from` (each checked first) and plays to its last tick.
void play_segments(LiveEngine& engine, const std::string& dir, const replay::BroadcastManifest& m, std::uint64_t from) {
  for (const replay::BroadcastSegment& s : m.segments) {
    if (s.number <= from) continue;
    const std::vector<std::byte> bytes = segment(dir, m, s.number);
    REQUIRE(engine.check(bytes).ok());
    REQUIRE(engine.append(bytes).ok());
    Result<std::optional<replay::Desync>> played = engine.play_to(engine.last_tick());
    REQUIRE(played.ok());
    REQUIRE_FALSE(played->has_value());
  }
}

}  // namespace

TEST_CASE("the browser's live engine follows a broadcast from its start and from a keyframe", "[cli][web][broadcast]") {
  TempDir dir;
  const std::string out = dir.file("live");
  const std::uint64_t final_hash = broadcast_session(out, dir.file("same.lsr"), 700, 30, 300);
  const replay::BroadcastManifest m = read_manifest(out);

  SECTION("from the start: every segment, every hash, the end's hash") {
    Result<replay::ReplayStream> stream = replay::ReplayStream::open(segment(out, m, 0));
    REQUIRE(stream.ok());
    std::unique_ptr<LiveEngine> engine = cli::detail::open_live_engine<Known>(std::move(stream).value());
    REQUIRE(engine != nullptr);
    const std::string hello = engine->hello_json("http://example/live/", 60);
    CHECK(hello.find("\"mode\":\"live\"") != std::string::npos);
    CHECK(hello.find("\"players\":4") != std::string::npos);
    CHECK(hello.find("\"tick_rate_hz\":60") != std::string::npos);
    CHECK(hello.find("http://example/live/") != std::string::npos);
    cli::view::FrameBatchWriter batch;
    engine->frame(batch);  // the start state, before any input
    CHECK(frame_tick(batch.bytes()) == 0);
    play_segments(*engine, out, m, 0);
    CHECK(engine->tick() == 700);
    REQUIRE(engine->end().has_value());
    CHECK(engine->end()->hash == final_hash);
    CHECK(engine->hash() == final_hash);
    engine->frame(batch);
    CHECK(frame_tick(batch.bytes()) == 700);
  }

  SECTION("from the keyframe at tick 600: the same end") {
    const std::optional<replay::BroadcastSegment> keyframe = m.keyframe_at_or_before(650);
    REQUIRE(keyframe.has_value());
    CHECK(keyframe->last_tick == 600);
    Result<replay::ReplayStream> stream =
        replay::ReplayStream::open_at_keyframe(segment(out, m, 0), segment(out, m, keyframe->number));
    REQUIRE(stream.ok());
    std::unique_ptr<LiveEngine> engine = cli::detail::open_live_engine<Known>(std::move(stream).value());
    CHECK(engine->start_tick() == 600);
    play_segments(*engine, out, m, keyframe->number);
    CHECK(engine->hash() == final_hash);
  }

  SECTION("a damaged segment is refused by check and changes nothing; the whole one plays on") {
    Result<replay::ReplayStream> stream = replay::ReplayStream::open(segment(out, m, 0));
    REQUIRE(stream.ok());
    std::unique_ptr<LiveEngine> engine = cli::detail::open_live_engine<Known>(std::move(stream).value());
    std::vector<std::byte> damaged = segment(out, m, 1);
    damaged[damaged.size() / 2] ^= std::byte{0x40};
    CHECK_FALSE(engine->check(damaged).ok());
    CHECK(engine->last_tick() == 0);
    play_segments(*engine, out, m, 0);
    CHECK(engine->hash() == final_hash);
  }
}

TEST_CASE("a broadcast's viewer keeps its distance from live, catches up, and counts the times it ran dry",
          "[cli][broadcast]") {
  // 60 ticks a second, 4 s (240 ticks) behind; live at tick 120 when playing begins at tick 0:
  // it waits until live is 240 ahead, (240 - 120) / 60 = 2 s.
  BroadcastPace pace(60, 240, 0, 120, 10.0);
  const double starts = 12.0;
  CHECK(pace.target(11.0, 160, 160, false) == 0);
  CHECK(pace.target(starts + 1.0, 400, 400, false) == 60);
  // More than twice --behind from live: it jumps to twice --behind, and paces from there.
  CHECK(pace.target(starts + 2.0, 1000, 1000, false) == 520);
  CHECK(pace.target(starts + 3.0, 1060, 1060, false) == 580);
  CHECK(pace.stalls() == 0);
  // The ticks due have not all arrived: one stall however long it stays dry…
  CHECK(pace.target(starts + 4.0, 1060, 600, false) == 600);
  CHECK(pace.target(starts + 4.5, 1060, 600, false) == 600);
  CHECK(pace.stalls() == 1);
  // … and another when more came and ran out too.
  CHECK(pace.target(starts + 5.0, 1060, 610, false) == 610);
  CHECK(pace.stalls() == 2);
  // Enough has come: it plays on at the tick rate from there.
  CHECK(pace.target(starts + 5.5, 1120, 1000, false) == 640);
  // At the broadcast's end, reaching its last tick is no stall.
  CHECK(pace.target(starts + 7.5, 1120, 1120, true) == 760);
  CHECK(pace.target(starts + 30.0, 1120, 1120, true) == 1120);
  CHECK(pace.stalls() == 2);
  // Waiting for a broadcast to begin is no stall.
  BroadcastPace early(60, 0, 0, 0, 0.0);
  CHECK(early.target(1.0, 0, 0, false) == 0);
  CHECK(early.target(2.0, 0, 0, false) == 0);
  CHECK(early.stalls() == 0);
  CHECK(cli::detail::broadcast_progress_line(1000, 1120, 60, {3, 1, 4096}, pace.stalls()) ==
        "broadcast: tick 1000, live 1120 (2.0 s behind), segments 3 (1 fetched again), 4096 bytes, stalls 2");
}
