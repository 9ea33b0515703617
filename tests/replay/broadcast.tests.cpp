// A live broadcast (replay/broadcast_sink.hpp) as real files: its segments in order are exactly
// the recording; a viewer (ReplayStream, LivePlayer) reads them as they come, from the start or
// from a keyframe, verifying every hash; damaged segments and hostile manifests are refused
// without changing what was read.

#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/broadcast_manifest.hpp"
#include "lockstep/replay/broadcast_sink.hpp"
#include "lockstep/replay/live_player.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/recorder.hpp"
#include "lockstep/replay/replay_stream.hpp"
#include "broadcasts.hpp"
#include "process.hpp"
#include "sessions.hpp"

using namespace lockstep;
using namespace lockstep::replay;
using lockstep::testing::as_bytes;
using lockstep::testing::broadcast_session;
using lockstep::testing::read_file;
using lockstep::testing::read_manifest;
using lockstep::testing::segment;
using lockstep::testing::read_file_bytes;
using lockstep::testing::small_arena;
using lockstep::testing::TempDir;

TEST_CASE("a broadcast's segments in order are the recording, byte for byte", "[replay][broadcast]") {
  TempDir dir;
  const std::string out = dir.file("live");
  const std::uint64_t final_hash = broadcast_session(out, dir.file("same.lsr"), 700, 30, 300);
  const BroadcastManifest m = read_manifest(out);
  REQUIRE(m.end.has_value());
  CHECK(m.end->tick == 700);
  CHECK(m.end->hash == final_hash);
  CHECK(m.tick_rate_hz == 60);
  // Flushed every 30 ticks: 24 segments of ticks (two of them ending with their keyframes, at
  // ticks 300 and 600, written with their ticks) and the end record's.
  REQUIRE(m.segments.size() == 25);
  CHECK(m.segments.front().number == 1);
  CHECK(m.segments.front().first_tick == 1);
  CHECK(m.segments.back().first_tick == 700);
  std::vector<std::uint64_t> keyframes;
  for (const BroadcastSegment& s : m.segments) {
    if (s.keyframe) keyframes.push_back(s.last_tick);
  }
  CHECK(keyframes == std::vector<std::uint64_t>{300, 600});
  std::vector<std::byte> joined = segment(out, m, 0);
  for (const BroadcastSegment& s : m.segments) {
    const std::vector<std::byte> bytes = segment(out, m, s.number);
    CHECK(bytes.size() == s.bytes);
    joined.insert(joined.end(), bytes.begin(), bytes.end());
  }
  CHECK(joined == read_file_bytes(dir.file("same.lsr")));
  // Nothing half-written is left beside them.
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    CHECK(entry.path().filename().string().find(".part") == std::string::npos);
  }
}

TEST_CASE("a viewer plays a broadcast from its start or from a keyframe, verifying every hash",
          "[replay][broadcast]") {
  TempDir dir;
  const std::string out = dir.file("live");
  const std::uint64_t final_hash = broadcast_session(out, dir.file("same.lsr"), 650, 60, 300);
  const BroadcastManifest m = read_manifest(out);

  SECTION("from the start") {
    Result<ReplayStream> stream = ReplayStream::open(segment(out, m, 0));
    REQUIRE(stream.ok());
    Result<LivePlayer<World>> player = LivePlayer<World>::open(std::move(stream).value(), false);
    REQUIRE(player.ok());
    std::uint64_t checked = 0;
    for (const BroadcastSegment& s : m.segments) {
      REQUIRE(player->append(segment(out, m, s.number)).ok());
      Result<PlayOutcome> played = player->play_to(player->last_tick());
      REQUIRE(played.ok());
      CHECK_FALSE(played->desync.has_value());
      checked += played->hashes_checked;
    }
    CHECK(player->ended());
    CHECK(player->tick() == 650);
    CHECK(player->runner().hash() == final_hash);
    CHECK(checked == 650);
  }
  SECTION("from the keyframe of tick 600, as a recording that starts there") {
    std::uint64_t at = 0;
    for (const BroadcastSegment& s : m.segments) {
      if (s.keyframe && s.last_tick == 600) at = s.number;
    }
    REQUIRE(at != 0);
    Result<ReplayStream> stream = ReplayStream::open_at_keyframe(segment(out, m, 0), segment(out, m, at));
    REQUIRE(stream.ok());
    CHECK(stream->file().header.start_tick == 600);
    Result<LivePlayer<World>> player = LivePlayer<World>::open(std::move(stream).value(), false);
    REQUIRE(player.ok());
    CHECK(player->tick() == 600);
    for (std::uint64_t n = at + 1; n <= m.segments.back().number; ++n) REQUIRE(player->append(segment(out, m, n)).ok());
    Result<PlayOutcome> played = player->play_to(650);
    REQUIRE(played.ok());
    CHECK_FALSE(played->desync.has_value());
    CHECK(played->hashes_checked == 50);
    CHECK(player->runner().hash() == final_hash);
  }
  SECTION("a segment that does not end with a keyframe is no place to start") {
    Result<ReplayStream> stream = ReplayStream::open_at_keyframe(segment(out, m, 0), segment(out, m, 1));
    REQUIRE_FALSE(stream.ok());
    CHECK(stream.error().message == "the segment to start from does not end with a keyframe");
  }
}

namespace {

/// A sink in memory that takes pieces of at most `max` bytes.
class SmallPieces final : public ReplaySink {
 public:
  SmallPieces(std::vector<std::byte>& out, std::uint64_t max) : out_(out), max_(max) {}
  Status write(std::span<const std::byte> bytes, const WrittenChunks&) override {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
    return {};
  }
  Status close() override { return {}; }
  [[nodiscard]] std::uint64_t max_piece_bytes() const override { return max_; }

 private:
  std::vector<std::byte>& out_;
  std::uint64_t max_;
};

}  // namespace

TEST_CASE("a piece over the sink's bound ends the recording there, properly", "[replay][broadcast]") {
  const WorldConfig config = small_arena();
  Result<Runner<World>> runner = Runner<World>::create(config, 5);
  REQUIRE(runner.ok());
  std::vector<std::byte> bytes;
  RecordOptions options;
  options.keyframe_every = 120;
  options.whole_keyframes = true;
  // Ticks' pieces fit; the first keyframe (the 120-body arena's state) does not.
  Result<Recorder<World>> recorder =
      Recorder<World>::create(std::make_unique<SmallPieces>(bytes, 2000), config, 5, runner.value(), options);
  REQUIRE(recorder.ok());
  std::vector<Bot> bots = {Bot(5, 0), Bot(5, 1), Bot(5, 2), Bot(5, 3)};
  std::vector<ButtonInput> inputs(4);
  for (int t = 0; t < 200; ++t) {
    for (std::size_t p = 0; p < 4; ++p) inputs[p] = bots[p].next();
    REQUIRE(runner->step(inputs).ok());
    REQUIRE(recorder->record(runner.value(), inputs).ok());
  }
  REQUIRE(recorder->finish().ok());
  CHECK(recorder->reached_limit());
  CHECK(recorder->written_tick() == 120);  // the ticks before the keyframe, and then the end
  Result<ReplayFile> file = parse_replay(bytes);
  REQUIRE(file.ok());
  CHECK(file->end.has_value());
  CHECK(file->last_tick == 120);
  CHECK(file->keyframes.empty());
}

TEST_CASE("a damaged segment is refused without changing what was read", "[replay][broadcast]") {
  TempDir dir;
  const std::string out = dir.file("live");
  broadcast_session(out, dir.file("same.lsr"), 200, 60, 0);
  const BroadcastManifest m = read_manifest(out);
  Result<ReplayStream> stream = ReplayStream::open(segment(out, m, 0));
  REQUIRE(stream.ok());
  REQUIRE(stream->append(segment(out, m, 1)).ok());
  const std::vector<std::byte> good = segment(out, m, 2);

  std::vector<std::byte> flipped = good;
  flipped[flipped.size() / 2] ^= std::byte{0x10};
  Status bad = stream->append(flipped);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("fails its checksum") != std::string::npos);

  const std::vector<std::byte> cut(good.begin(), good.end() - 3);
  bad = stream->append(cut);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("ends inside a chunk") != std::string::npos);
  CHECK(stream->file().last_tick == 60);

  // Fetched again whole, it goes on where the stream was.
  REQUIRE(stream->append(good).ok());
  CHECK(stream->file().last_tick == 120);
  // A segment out of order breaks the format's rules: not damage, a malformed broadcast, after
  // which the stream takes nothing more.
  bad = stream->append(segment(out, m, 1));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("out of order") != std::string::npos);
  bad = stream->append(segment(out, m, 3));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("the stream broke earlier: ") == 0);
}

TEST_CASE("a broadcast's manifest lists its latest segments", "[replay][broadcast]") {
  TempDir dir;
  const std::string out = dir.file("live");
  broadcast_session(out, dir.file("same.lsr"), 200, 1, 0);
  const BroadcastManifest m = read_manifest(out);
  // 200 segments of one tick and the end's: the manifest keeps the latest k_broadcast_window.
  REQUIRE(m.segments.size() == k_broadcast_window);
  CHECK(m.segments.back().number == 201);
  CHECK(m.segments.front().number == 201 - k_broadcast_window + 1);
  CHECK(m.live_tick() == 200);
  // Every segment is still on disk, listed or not.
  CHECK(std::filesystem::exists(out + "/" + m.segment_name(1)));
  Result<BroadcastManifest> again = parse_manifest(as_bytes(encode_manifest(m)));
  REQUIRE(again.ok());
  CHECK(again->segments.size() == m.segments.size());
  CHECK(again->id == m.id);
  CHECK(again->end->hash == m.end->hash);
}

TEST_CASE("hostile manifests are refused with one line", "[replay][broadcast]") {
  const auto refused = [](const std::string& text) {
    Result<BroadcastManifest> m = parse_manifest(as_bytes(text));
    REQUIRE_FALSE(m.ok());
    return m.error().message;
  };
  const std::string head = R"({"format":"lockstep broadcast","version":1,"id":"00112233aabbccdd","tick_rate_hz":60,)"
                           R"("start_tick":0,"opening_bytes":300,)";
  CHECK(parse_manifest(as_bytes(head + R"("segments":[]})")).ok());
  CHECK(refused("") .find("not JSON") != std::string::npos);
  CHECK(refused("[1,2]") == "the broadcast's manifest is not a JSON object");
  CHECK(refused(R"({"format":"something else"})") == "not a lockstep broadcast's manifest");
  CHECK(refused(std::string(70'000, ' ')).find("over the 65536-byte bound") != std::string::npos);
  // Nesting is parsed without recursion: deep enough to overflow a recursive parser's stack.
  CHECK(refused(head + R"("segments":[)" + std::string(30'000, '[') + "}").find("not JSON") != std::string::npos);
  CHECK(refused(R"({"format":"lockstep broadcast","version":2})") == "broadcast version 2 is not this build's version 1");
  CHECK(refused(R"({"format":"lockstep broadcast","version":1,"id":"00112233AABBCCDD"})") ==
        "the broadcast's manifest has no valid \"id\" (16 hex digits)");
  CHECK(refused(head + R"("segments":[{"n":1,"first":1,"last":60,"keyframe":false,"bytes":10},)"
                       R"({"n":3,"first":61,"last":120,"keyframe":false,"bytes":10}]})") ==
        "the broadcast's manifest lists segment 3 (ticks 61..120) after segment 1 (ticks 1..60)");
  CHECK(refused(head + R"("segments":[{"n":1,"first":1,"last":60,"keyframe":false,"bytes":99999999999}]})")
            .find("\"bytes\"") != std::string::npos);
  CHECK(refused(head + R"("segments":[{"n":1,"first":9,"last":3,"keyframe":false,"bytes":10}]})") ==
        "the broadcast's manifest lists an impossible segment 1");
  CHECK(refused(head + R"("segments":[{"n":1,"first":1,"last":60,"keyframe":false,"bytes":10}],)"
                       R"("end":{"tick":61,"hash":"0011223344556677"}})") ==
        "the broadcast's manifest ends at tick 61 but its segments end at tick 60");
  std::string many = head + R"("segments":[)";
  for (int n = 1; n <= 129; ++n) {
    many += (n > 1 ? "," : "") + std::string(R"({"n":)") + std::to_string(n) + R"(,"first":)" + std::to_string(n) +
            R"(,"last":)" + std::to_string(n) + R"(,"keyframe":false,"bytes":10})";
  }
  CHECK(refused(many + "]}") == "the broadcast's manifest lists 129 segments, over 128");
}
