#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/replay/keyframe_codec.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/recorder.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "lockstep/replay/replay_writer.hpp"
#include "process.hpp"
#include "replay_chunks.hpp"
#include "sessions.hpp"

using namespace lockstep;
using namespace lockstep::replay;
using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::record_session;
using lockstep::testing::small_arena;
using lockstep::testing::TempDir;
using lockstep::testing::ChunkSpan;
using lockstep::testing::chunk_spans;
using lockstep::testing::reseal;
using lockstep::testing::reseal_header;
using lockstep::testing::with_chunk;
using lockstep::testing::with_header;

namespace {

std::string parse_error(const std::vector<std::byte>& bytes) {
  Result<ReplayFile> file = parse_replay(bytes);
  return file.ok() ? std::string("parsed") : file.error().message;
}

/// The keyframe chunk of `tick`.
std::optional<ChunkSpan> keyframe_span(const std::vector<std::byte>& bytes, std::uint64_t tick) {
  for (const ChunkSpan& span : chunk_spans(bytes)) {
    if (span.type == static_cast<std::uint8_t>(ChunkType::keyframe) && span.first == tick) return span;
  }
  return std::nullopt;
}

Player<World> open_file(const std::string& path) {
  Result<ReplayFile> file = read_replay_file(path);
  REQUIRE(file.ok());
  Result<Player<World>> player = Player<World>::open(std::move(file).value(), false);
  REQUIRE(player.ok());
  return std::move(player).value();
}

}  // namespace

TEST_CASE("a recording parses back to what was recorded", "[replay][format]") {
  TempDir dir;
  const std::string path = dir.file("a.lsr");
  std::vector<std::vector<ButtonInput>> seen;
  const std::uint64_t final_hash = record_session(
      path, small_arena(), 5, 250, {1, 100},
      [&](std::uint64_t, std::vector<ButtonInput>& inputs, Runner<World>&) { seen.push_back(inputs); });
  Result<ReplayFile> file = read_replay_file(path);
  REQUIRE(file.ok());
  CHECK(file->header.simulation == World::k_name);
  CHECK(file->header.compatibility_id == World::compatibility_id());
  CHECK(file->header.seed == 5);
  CHECK(file->header.players == 4);
  CHECK(file->header.input_bytes == 2);
  CHECK(file->last_tick == 250);
  CHECK(file->hashes.size() == 250);
  REQUIRE(file->end.has_value());
  CHECK(file->end->tick == 250);
  CHECK(file->end->hash == final_hash);
  CHECK_FALSE(file->truncated);
  REQUIRE(file->keyframes.size() == 2);
  CHECK(file->keyframes[0].tick == 100);
  CHECK(file->keyframes[1].tick == 200);
  CHECK(file->sizes.total() == read_file(path).size());
  // Inputs: the runs expand back to exactly the inputs stepped.
  for (std::uint32_t p = 0; p < 4; ++p) {
    std::uint64_t tick = 1;
    const InputRuns& runs = file->inputs[p];
    for (std::size_t r = 0; r < runs.size(); ++r) {
      REQUIRE(runs.first_tick(r) == tick);
      const std::uint64_t last = r + 1 < runs.size() ? runs.first_tick(r + 1) - 1 : file->last_tick;
      for (std::uint64_t t = runs.first_tick(r); t <= last; ++t) {
        const auto decoded = ButtonInput::from_bytes(std::span<const std::byte, 2>(runs.input(r).data(), 2));
        REQUIRE(decoded == seen[t - 1][p]);
      }
      tick = last + 1;
    }
    CHECK(tick == 251);
  }
}

TEST_CASE("held inputs cost almost nothing: a chunk of idle ticks is one run per player",
          "[replay][format]") {
  TempDir dir;
  const std::string path = dir.file("idle.lsr");
  record_session(path, small_arena(), 1, 600, {0, 0},
                 [](std::uint64_t, std::vector<ButtonInput>& inputs, Runner<World>&) {
                   for (ButtonInput& in : inputs) in = ButtonInput{};
                 });
  Result<ReplayFile> file = read_replay_file(path);
  REQUIRE(file.ok());
  for (const InputRuns& runs : file->inputs) CHECK(runs.size() == 10);  // one per 60-tick chunk
  // 10 chunks × (framing: type 1, length 1, first tick 1 or 2, span 1, check 4, checksum 4;
  // then 4 players × (1 count + 1 length + 2 input)) bytes; the first tick takes 2 bytes from
  // 128, in 7 of the 10 chunks (181 … 541).
  CHECK(file->sizes.inputs == 10 * (12 + 4 * 4) + 7);
  CHECK(file->hashes.empty());
}

TEST_CASE("bad files are rejected with their own one-line errors", "[replay][format][errors]") {
  TempDir dir;
  const std::string path = dir.file("a.lsr");
  record_session(path, small_arena(), 5, 130, {1, 60});
  const std::vector<std::byte> good = lockstep::testing::read_file_bytes(path);
  REQUIRE(parse_error(good) == "parsed");
  const auto spans = chunk_spans(good);
  // header, inputs 1-60, hashes, keyframe 60, inputs 61-120, hashes, keyframe 120, inputs, hashes, end
  REQUIRE(spans.size() == 10);

  SECTION("not a replay") {
    const std::string text = "definitely not a replay";
    std::vector<std::byte> bytes(text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
    CHECK(parse_error(bytes) == "not a lockstep replay file");
    CHECK(parse_error({}) == "empty file: not a lockstep replay file");
  }
  SECTION("a newer format version names both versions") {
    std::vector<std::byte> bytes = good;
    bytes[8] = std::byte{7};
    CHECK(parse_error(bytes) == "replay format version 7 is newer than this build's version 2; a newer lockstep reads it");
  }
  SECTION("a version 1 file is refused, saying what to do") {
    std::vector<std::byte> bytes = good;
    bytes[8] = std::byte{1};
    CHECK(parse_error(bytes) == "replay format version 1 is older than this build's version 2, which no longer reads "
                                "it; play it with lockstep 0.2, or record it again");
  }
  SECTION("a truncated header") {
    for (std::size_t size : {std::size_t{3}, std::size_t{12}, spans[0].end - 1}) {
      std::vector<std::byte> bytes(good.begin(), good.begin() + static_cast<long>(size));
      CHECK_THAT(parse_error(bytes), Catch::StartsWith("truncated header"));
    }
  }
  SECTION("a checksum failure names the chunk and its byte offset") {
    std::vector<std::byte> bytes = good;
    bytes[spans[4].payload + 2] ^= std::byte{0x40};
    CHECK(parse_error(bytes) == "chunk 5 (inputs) at byte " + std::to_string(spans[4].begin) + " fails its checksum");
  }
  SECTION("an impossible length") {
    const std::vector<std::byte> bytes =
        with_header(good, spans[1], spans[1].type, k_max_inputs_payload_bytes + 1, spans[1].first, spans[1].last);
    CHECK_THAT(parse_error(bytes), Catch::Contains("claims an impossible length"));
  }
  SECTION("a corrupted length is not mistaken for a crash's truncation") {
    std::vector<std::byte> bytes = good;
    bytes[spans[1].begin + 1] ^= std::byte{0x10};
    CHECK(parse_error(bytes) == "chunk 2 at byte " + std::to_string(spans[1].begin) +
                                    " has a corrupt header (its check fails)");
  }
  SECTION("a malformed varint in a header is corruption") {
    std::vector<std::byte> bytes = good;
    bytes[spans[1].begin + 1] = std::byte{0x80};  // an overlong length: a continuation, then 0
    bytes[spans[1].begin + 2] = std::byte{0x00};
    CHECK(parse_error(bytes) == "chunk 2 at byte " + std::to_string(spans[1].begin) +
                                    " has a corrupt header (its check fails)");
  }
  SECTION("an impossible count inside a checksummed chunk") {
    std::vector<std::byte> bytes = good;
    // The first player's run count in the first inputs chunk (64 runs in 60 ticks), sealed.
    bytes[spans[1].payload] = std::byte{0x40};
    reseal(bytes, spans[1]);
    CHECK_THAT(parse_error(bytes), Catch::Contains("impossible run count"));
  }
  SECTION("ticks out of order") {
    // The inputs chunk claims to start at tick 70, not 61.
    const std::vector<std::byte> bytes = with_header(good, spans[4], spans[4].type, spans[4].payload_end() - spans[4].payload,
                                                     70, spans[4].last);
    CHECK_THAT(parse_error(bytes), Catch::Contains("out of order"));
  }
  SECTION("an unknown chunk type") {
    std::vector<std::byte> bytes = good;
    bytes[spans[2].begin] = std::byte{99};
    reseal_header(bytes, spans[2]);
    CHECK_THAT(parse_error(bytes), Catch::Contains("unknown type 99"));
  }
  SECTION("data after the end record") {
    std::vector<std::byte> bytes = good;
    bytes.push_back(std::byte{0});
    CHECK_THAT(parse_error(bytes), Catch::Contains("after the end record"));
  }
  SECTION("every message is one line") {
    std::vector<std::byte> bytes = good;
    bytes[spans[3].begin + 40] ^= std::byte{1};
    const std::string message = parse_error(bytes);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("a file cut anywhere plays every complete chunk and says where it was cut",
          "[replay][format][truncation]") {
  TempDir dir;
  const std::string path = dir.file("a.lsr");
  record_session(path, small_arena(), 5, 200, {1, 60});
  const std::vector<std::byte> good = lockstep::testing::read_file_bytes(path);
  const auto spans = chunk_spans(good);
  std::uint64_t previous_last_tick = 0;
  for (std::size_t size = spans[0].end; size < good.size(); ++size) {
    const std::vector<std::byte> cut(good.begin(), good.begin() + static_cast<long>(size));
    Result<ReplayFile> file = parse_replay(cut);
    INFO("cut at byte " << size);
    REQUIRE(file.ok());
    // Truncated exactly at a chunk boundary reads as complete chunks without an end record.
    const bool at_boundary = std::any_of(spans.begin(), spans.end(), [&](auto s) { return s.end == size; });
    CHECK(file->truncated == !at_boundary);
    CHECK_FALSE(file->end.has_value());
    CHECK(file->last_tick >= previous_last_tick);
    previous_last_tick = file->last_tick;
    if (file->truncated) {
      CHECK(file->truncated_at_byte < size);
      CHECK(std::any_of(spans.begin(), spans.end(), [&](auto s) { return s.begin == file->truncated_at_byte; }));
    }
  }
  CHECK(previous_last_tick == 200);
}

TEST_CASE("every single-byte change to a small recording is refused in one line naming the chunk it "
          "falls in, except in the reserved bytes, which are ignored",
          "[replay][format][exhaustive]") {
  TempDir dir;
  const std::string path = dir.file("ball.lsr");
  WorldConfig config = default_world_config(Scene::ball);
  const std::uint64_t final_hash = record_session(path, config, 9, 90, {1, 30});
  const std::vector<std::byte> good = lockstep::testing::read_file_bytes(path);
  const auto spans = chunk_spans(good);
  INFO("file of " << good.size() << " bytes in " << spans.size() << " chunks");
  REQUIRE(spans.size() >= 4);
  REQUIRE(spans.back().end == good.size());
  Player<World> original = open_file(path);
  const Result<PlayOutcome> played = original.play_to(original.last_tick());
  REQUIRE(played.ok());
  const std::uint64_t hashes_checked = played->hashes_checked;
  REQUIRE(hashes_checked >= 90);
  // Where a change lands decides its fate. In the preamble the magic and the version are checked
  // and the reserved bytes are not (FORMAT.md). Every chunk byte is under the chunk's header check
  // or its checksum, so a change anywhere in a chunk is refused by the parser as that chunk's,
  // and never reaches the player or desyncs. What a change at a position must give: a one-line
  // message that starts with `starts` and holds `holds`; both empty: it verifies as the original.
  struct Expected {
    std::string starts;
    std::string holds;
    [[nodiscard]] bool verifies() const { return starts.empty(); }
    [[nodiscard]] bool met_by(const std::string& message) const {
      return message.rfind(starts, 0) == 0 && message.find(holds) != std::string::npos &&
             message.find('\n') == std::string::npos;
    }
  };
  const auto expected_at = [&](std::size_t at) -> Expected {
    if (at < 8) return {"not a lockstep replay file", ""};
    if (at < 12) return {"replay format version ", ""};
    if (at < k_preamble_bytes) return {};
    // "chunk N at byte B has a corrupt header…" or "chunk N (type) at byte B fails its checksum".
    const std::size_t c = static_cast<std::size_t>(
        std::find_if(spans.begin(), spans.end(), [&](const ChunkSpan& s) { return at < s.end; }) - spans.begin());
    return {"chunk " + std::to_string(c + 1) + " ", " at byte " + std::to_string(spans[c].begin) + " "};
  };
  std::size_t verified = 0;
  std::size_t refused = 0;
  std::vector<std::string> wrong;  // every change whose outcome is not the one its position requires
  std::vector<std::byte> bytes = good;
  for (std::size_t i = 0; i < good.size(); ++i) {
    const Expected want = expected_at(i);
    for (unsigned value = 0; value < 256; ++value) {
      if (static_cast<std::byte>(value) == good[i]) continue;
      bytes[i] = static_cast<std::byte>(value);
      const std::string change = "byte " + std::to_string(i) + " set to " + std::to_string(value) + ": ";
      Result<ReplayFile> file = parse_replay(bytes);
      if (!file) {
        if (want.verifies() || !want.met_by(file.error().message)) {
          wrong.push_back(change + "refused with '" + file.error().message + "', want " +
                          (want.verifies() ? "verified" : "'" + want.starts + "…" + want.holds + "…'"));
        } else {
          ++refused;
        }
        continue;
      }
      if (!want.verifies()) {
        wrong.push_back(change + "parsed, want refused with '" + want.starts + "…" + want.holds + "…'");
        continue;
      }
      Result<Player<World>> player = Player<World>::open(std::move(file).value(), false);
      if (!player) {
        wrong.push_back(change + "not opened: " + player.error().message);
        continue;
      }
      Result<PlayOutcome> outcome = player->play_to(player->last_tick());
      if (!outcome || outcome->desync || player->check_start() || outcome->hashes_checked != hashes_checked ||
          player->runner().hash() != final_hash) {
        wrong.push_back(change + "did not verify with the original's hashes and final hash");
        continue;
      }
      ++verified;
    }
    bytes[i] = good[i];
  }
  INFO(wrong.size() << " changes with the wrong outcome, the first: "
                    << (wrong.empty() ? std::string("none") : wrong.front()));
  CHECK(wrong.empty());
  CHECK(verified == 4 * 255);  // the four reserved bytes of the preamble
  CHECK(refused == (good.size() - 4) * 255);
}

TEST_CASE("keyframes are stored as their difference from the first, which decodes exactly or is refused",
          "[replay][format][keyframes]") {
  std::vector<std::byte> first(1003);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<std::byte>((i * 37) & 0xFF);
  std::vector<std::byte> later = first;
  for (std::size_t i : {std::size_t{0}, std::size_t{7}, std::size_t{8}, std::size_t{500}, std::size_t{501},
                        std::size_t{503}, std::size_t{1002}}) {
    later[i] ^= std::byte{0x5A};
  }
  std::vector<std::byte> code;
  encode_keyframe_delta(later, first, code);
  CHECK(code.size() < 40);  // seven changed bytes among a thousand
  Result<std::vector<std::byte>> decoded = decode_keyframe_delta(code, first);
  REQUIRE(decoded.ok());
  CHECK(decoded.value() == later);
  std::vector<std::byte> same;
  encode_keyframe_delta(first, first, same);
  CHECK(decode_keyframe_delta(same, first).value() == first);

  SECTION("hostile codes") {
    std::vector<std::byte> cut(code.begin(), code.end() - 1);
    CHECK_THAT(decode_keyframe_delta(cut, first).error().message, Catch::Contains("cut short") || Catch::Contains("past"));
    std::vector<std::byte> extra = code;
    extra.push_back(std::byte{1});
    CHECK_THAT(decode_keyframe_delta(extra, first).error().message, Catch::Contains("past its snapshot's end"));
    std::vector<std::byte> overrun;
    ByteWriter w(overrun);
    w.varint(first.size() + 1);  // more zeros than the snapshot has bytes
    w.varint(0);
    CHECK_THAT(decode_keyframe_delta(overrun, first).error().message, Catch::Contains("runs past"));
    std::vector<std::byte> empty_run;
    ByteWriter e(empty_run);
    e.varint(0);
    e.varint(0);
    CHECK_THAT(decode_keyframe_delta(empty_run, first).error().message, Catch::Contains("empty run"));
  }
}

TEST_CASE("a keyframe altered with its checksums recomputed is passed over for an earlier one",
          "[replay][player][verify]") {
  TempDir dir;
  const std::string path = dir.file("a.lsr");
  record_session(path, small_arena(), 8, 300, {100, 100});
  std::vector<std::byte> bytes = lockstep::testing::read_file_bytes(path);
  const auto keyframe_200 = keyframe_span(bytes, 200);
  REQUIRE(keyframe_200.has_value());
  // A byte in the middle of the stored keyframe (its difference from the first), not its framing.
  const std::size_t middle = (keyframe_200->payload + keyframe_200->payload_end()) / 2;
  bytes[middle] ^= std::byte{0x10};
  reseal(bytes, *keyframe_200);
  const std::string tampered = dir.file("tampered.lsr");
  {
    std::ofstream out(tampered, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }

  Result<ReplayFile> good_file = read_replay_file(path);
  Result<ReplayFile> bad_file = read_replay_file(tampered);
  REQUIRE(good_file.ok());
  REQUIRE(bad_file.ok());
  Result<Player<World>> good = Player<World>::open(std::move(good_file).value(), false);
  Result<Player<World>> bad = Player<World>::open(std::move(bad_file).value(), false);
  REQUIRE(good.ok());
  REQUIRE(bad.ok());
  Result<PlayOutcome> trusted = good->seek(204);
  Result<PlayOutcome> passed_over = bad->seek(204);
  REQUIRE(trusted.ok());
  REQUIRE(passed_over.ok());
  CHECK(trusted->restored_tick == 200);
  CHECK(trusted->keyframes_distrusted == 0);
  CHECK(passed_over->restored_tick == 100);
  CHECK(passed_over->keyframes_distrusted == 1);
  CHECK_FALSE(passed_over->desync.has_value());
  CHECK(bad->runner().hash() == good->runner().hash());

  // The command line says so, and with no recorded hash in 201..204 it does not claim "ok".
  const ProcessResult r = lockstep::testing::run_process(LOCKSTEP_BINARY, {"replay", tampered, "--from-tick", "200", "--to-tick", "204"});
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.err, Catch::Contains("note: 1 keyframe(s) at or before tick 200 do not match a recorded hash"));
  CHECK(r.last_line() == "unverified: 4 ticks played, no recorded hash in range, final hash " + hash_hex(good->runner().hash()));
}

TEST_CASE("text from a file reaches the terminal with its control characters escaped",
          "[replay][format][errors]") {
  TempDir dir;
  const std::string path = dir.file("crafted.lsr");
  Result<Runner<World>> runner = Runner<World>::create(small_arena(), 1);
  REQUIRE(runner.ok());
  ReplayHeader header = make_header<World>(small_arena(), 1, runner.value(), {1, 0});
  header.build = "g++\nsimulation  forged.sim, compatibility id 0000000000000000 (matches this build)\x1b[2J";
  Result<ReplayWriter> writer = ReplayWriter::create(path, header, {});
  REQUIRE(writer.ok());
  REQUIRE(writer->finish().ok());
  const ProcessResult r = lockstep::testing::run_process(LOCKSTEP_BINARY, {"info", path});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);
  std::size_t simulation_lines = 0;
  for (const std::string& line : r.lines()) {
    if (line.rfind("simulation", 0) == 0) ++simulation_lines;
  }
  CHECK(simulation_lines == 1);
  CHECK_THAT(r.out, Catch::Contains("build       g++\\x0asimulation  forged.sim"));
  CHECK_THAT(r.out, Catch::Contains("\\x1b[2J"));
}

TEST_CASE("a recording that reaches the size limit ends there, complete, and reads back",
          "[replay][format][limit]") {
  TempDir dir;
  const std::string path = dir.file("limited.lsr");
  const WorldConfig config = small_arena();
  Result<Runner<World>> runner = Runner<World>::create(config, 3);
  REQUIRE(runner.ok());
  RecordOptions options{1, 60};
  options.max_file_bytes = 64 * 1024;  // a few keyframes' worth
  Result<Recorder<World>> recorder = Recorder<World>::create(path, config, 3, runner.value(), options);
  REQUIRE(recorder.ok());
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(3, p);
  std::vector<ButtonInput> inputs(config.players);
  std::vector<std::uint64_t> hashes{runner->hash()};
  for (std::uint64_t t = 1; t <= 3000; ++t) {
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
    REQUIRE(runner->step(inputs).ok());
    hashes.push_back(runner->hash());
    REQUIRE(recorder->record(runner.value(), inputs).ok());
  }
  REQUIRE(recorder->finish().ok());
  CHECK(recorder->reached_limit());
  const std::uint64_t ended = recorder->written_tick();
  CHECK(ended > 0);
  CHECK(ended < 3000);

  const std::string bytes = read_file(path);
  CHECK(bytes.size() <= options.max_file_bytes);
  CHECK(bytes.size() > options.max_file_bytes - 20 * 1024);  // it filled the room, less one chunk
  Result<ReplayFile> file = read_replay_file(path);
  REQUIRE(file.ok());
  REQUIRE(file->end.has_value());
  CHECK(file->end->tick == ended);
  CHECK(file->end->hash == hashes[ended]);
  CHECK_FALSE(file->truncated);
  Result<Player<World>> player = Player<World>::open(std::move(file).value(), false);
  REQUIRE(player.ok());
  Result<PlayOutcome> played = player->play_to(ended);
  REQUIRE(played.ok());
  CHECK_FALSE(played->desync.has_value());
  CHECK(played->hashes_checked == ended);
  CHECK(player->runner().hash() == hashes[ended]);
}

TEST_CASE("a keyframe that restores to another tick is not gone on from, even when it restored",
          "[replay][player][verify]") {
  // The chunk says tick 200; its snapshot is another session's state at tick 100. Restoring it
  // succeeds, and must not leave that state as a starting point for the seek's next try.
  TempDir dir;
  record_session(dir.file("a.lsr"), small_arena(), 8, 300, {100, 100});
  record_session(dir.file("b.lsr"), small_arena(), 9, 300, {100, 100});
  std::vector<std::byte> a = lockstep::testing::read_file_bytes(dir.file("a.lsr"));
  const std::vector<std::byte> b = lockstep::testing::read_file_bytes(dir.file("b.lsr"));
  const auto a_200 = keyframe_span(a, 200);
  const auto b_100 = keyframe_span(b, 100);
  REQUIRE(a_200.has_value());
  REQUIRE(b_100.has_value());
  // b's first keyframe is stored whole: put it, whole, in place of a's keyframe 200.
  const std::span<const std::byte> b_payload =
      std::span<const std::byte>(b).subspan(b_100->payload, b_100->payload_end() - b_100->payload);
  a = with_chunk(a, *a_200, a_200->type, b_payload.size(), 200, 200, b_payload);
  lockstep::testing::write_file_bytes(dir.file("tampered.lsr"), a);

  Player<World> good = open_file(dir.file("a.lsr"));
  Player<World> bad = open_file(dir.file("tampered.lsr"));
  Result<PlayOutcome> expected = good.seek(204);
  Result<PlayOutcome> passed_over = bad.seek(204);
  REQUIRE(expected.ok());
  REQUIRE(passed_over.ok());
  CHECK_FALSE(passed_over->desync.has_value());
  CHECK(passed_over->keyframes_distrusted == 1);
  CHECK(passed_over->restored_tick == 100);
  CHECK(bad.runner().hash() == good.runner().hash());
}
