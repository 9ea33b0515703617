// Files that are valid byte for byte but hostile in what they hold: each is answered within a
// bound on memory (measured in the child process with wait4) and on work, with its documented
// line and exit code. Times are reported in docs/COMMANDS.md's figures, never asserted here.

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "hostile_replays.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"
#include "replay_chunks.hpp"
#include "sessions.hpp"

using namespace lockstep;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::small_arena;
using lockstep::testing::TempDir;
using lockstep::testing::k_lockstep;

namespace {

/// Resident memory a reader may use for a file of `file_bytes`: two and a half times the file
/// (a one-tick run of a 2-byte input costs 3 bytes on disk and 6 in memory), plus a fixed amount
/// for the program, its libraries and a small world.
long memory_budget_kb(std::uint64_t file_bytes) {
  return static_cast<long>(5 * file_bytes / 2 / 1024) + 48 * 1024;
}

/// The first chunk of `type` in a file's bytes.
lockstep::testing::ChunkSpan chunk_of(const std::vector<std::byte>& bytes, replay::ChunkType type) {
  for (const lockstep::testing::ChunkSpan& span : lockstep::testing::chunk_spans(bytes)) {
    if (span.type == static_cast<std::uint8_t>(type)) return span;
  }
  FAIL("no chunk of type " << static_cast<int>(type));
  return {};
}

/// The file with its end record's hash replaced, the chunk's check and checksum right.
std::vector<std::byte> with_end_hash(const std::vector<std::byte>& bytes, std::uint64_t hash) {
  const lockstep::testing::ChunkSpan end = chunk_of(bytes, replay::ChunkType::end);
  std::vector<std::byte> payload;
  ByteWriter w(payload);
  w.u64(hash);
  return lockstep::testing::with_chunk(bytes, end, end.type, payload.size(), end.first, end.last, payload);
}

/// What the reader and every command say of a file it refuses: the same one line, exit code 2.
void check_refused(const std::string& path, const std::string& message) {
  const Result<replay::ReplayFile> read = replay::read_replay_file(path);
  REQUIRE_FALSE(read.ok());
  CHECK(read.error().message == message);
  for (const char* command : {"replay", "info", "export"}) {
    const ProcessResult r = run_process(k_lockstep, {command, path});
    INFO(command << ": " << r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "error: " + message + "\n");
  }
}

}  // namespace

TEST_CASE("a replay of one-tick input runs is read in memory in proportion to its size",
          "[replay][hostile]") {
  TempDir dir;
  const std::string path = dir.file("runs.lsr");
  const std::uint64_t bytes = lockstep::testing::write_one_tick_runs(path, small_arena(), 3'000'000);
  INFO("file of " << bytes << " bytes");
  REQUIRE(bytes > 32u << 20);

  const ProcessResult info = run_process(k_lockstep, {"info", path});
  CHECK(info.exit_code == 0);
  CHECK_THAT(info.out, Catch::Contains("ticks       0 to 3000000"));
  CHECK(info.peak_rss_kb < memory_budget_kb(bytes));

  const ProcessResult first = run_process(k_lockstep, {"replay", path, "--to-tick", "1"});
  CHECK(first.exit_code == 4);  // no hash kept before tick 3,000,000
  CHECK_THAT(first.last_line(), Catch::StartsWith("unverified: 1 ticks played"));
  CHECK(first.peak_rss_kb < memory_budget_kb(bytes));
  INFO("info peak " << info.peak_rss_kb << " KiB, replay peak " << first.peak_rss_kb << " KiB");
}

TEST_CASE("a replay whose start state crowds its bodies into a few grid cells is refused",
          "[replay][hostile]") {
  // Valid byte for byte, every value in range, the checksums right: only the layout is hostile.
  TempDir dir;
  WorldParams params;
  params.contacts = true;
  params.walls = true;
  params.max_px = {1000.0, 1000.0};
  World world(params, 4);
  for (int i = 0; i < 100'000; ++i) {
    world.add_body({{500.0 + 0.01 * (i % 316), 500.0 + 0.01 * (i / 316)}, {}, World::k_min_radius_px, 1.0});
  }
  std::vector<std::byte> snapshot;
  encode_snapshot(5, world, snapshot);
  Runner<World> start{World(world), 5};
  replay::ReplayHeader header = replay::make_header<World>(small_arena(), 1, start, {1, 0});
  const std::string path = dir.file("crowded.lsr");
  Result<replay::ReplayWriter> writer = replay::ReplayWriter::create(path, header, snapshot);
  REQUIRE(writer.ok());
  const std::vector<std::byte> neutral(4 * ButtonInput::k_bytes);
  for (std::uint64_t t = 6; t <= 10; ++t) REQUIRE(writer->add_tick(t, neutral, 0).ok());
  REQUIRE(writer->finish().ok());

  const ProcessResult r = run_process(k_lockstep, {"replay", path, "--to-tick", "7"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::regex_match(r.err, std::regex("error: the replay's start snapshot is rejected: [^\n]*the bodies crowd into too "
                                           "few grid cells \\([0-9]+ candidate contact pairs, more than 6404096\\)[^\n]*\n")));
  CHECK(r.peak_rss_kb < memory_budget_kb(snapshot.size()));
}

TEST_CASE("two tiny replays whose configuration asks for a million bodies are compared within "
          "the state budget",
          "[replay][hostile]") {
  TempDir dir;
  for (const char* seed : {"1", "2"}) {
    const ProcessResult r = run_process(k_lockstep, {"run", "--bodies", "1000000", "--ticks", "1", "--hash-every", "0",
                                                     "--seed", seed, "--record", dir.file(std::string(seed) + ".lsr")});
    REQUIRE(r.exit_code == 0);
  }
  REQUIRE(lockstep::testing::read_file(dir.file("1.lsr")).size() < 1024);

  const ProcessResult diff = run_process(k_lockstep, {"diff", dir.file("1.lsr"), dir.file("2.lsr")});
  INFO(diff.out << diff.err);
  CHECK(diff.exit_code == 1);
  CHECK_THAT(diff.out, Catch::Contains("first divergence at tick 0"));
  CHECK(std::regex_search(diff.out, std::regex("no field report: listing the fields of two states this large takes "
                                               "about [0-9]+ MB, over the 256 MB state budget \\(--max-state-mb raises it\\)")));
  CHECK(diff.peak_rss_kb < 256 * 1024);

  const ProcessResult refused = run_process(k_lockstep, {"replay", dir.file("1.lsr"), "--max-state-mb", "16"});
  CHECK(refused.exit_code == 2);
  CHECK(std::regex_match(refused.err, std::regex("error: the replay's state takes [0-9]+ MB, over the 16 MB budget for a "
                                                 "state \\(--max-state-mb raises it\\)\n")));
}

TEST_CASE("a replay that starts past tick 0 with an empty start snapshot is refused in one line, whole or cut short",
          "[replay][hostile]") {
  // A real recording of a session joined at tick 30, as a late spectator writes one; then the same
  // file with its start snapshot emptied (every check and checksum right), and that file cut short.
  TempDir dir;
  const WorldConfig config = small_arena();
  Result<Runner<World>> runner = Runner<World>::create(config, 4);
  REQUIRE(runner.ok());
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(4, p);
  std::vector<ButtonInput> inputs(config.players);
  const auto step = [&] {
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
    REQUIRE(runner->step(inputs).ok());
  };
  for (int t = 1; t <= 30; ++t) step();
  const std::string honest = dir.file("honest.lsr");
  {
    Result<replay::Recorder<World>> recorder = replay::Recorder<World>::create(honest, config, 4, runner.value(), {1, 0});
    REQUIRE(recorder.ok());
    for (int t = 31; t <= 120; ++t) {
      step();
      REQUIRE(recorder->record(runner.value(), inputs).ok());
    }
    REQUIRE(recorder->finish().ok());
  }
  const ProcessResult played = run_process(k_lockstep, {"replay", honest});
  INFO(played.out << played.err);
  REQUIRE(played.exit_code == 0);
  REQUIRE(played.last_line() == "ok 90 ticks verified, 90 hashes checked, final hash " + hash_hex(runner->hash()));

  const std::vector<std::byte> good = lockstep::testing::read_file_bytes(honest);
  const lockstep::testing::ChunkSpan start = chunk_of(good, replay::ChunkType::start_snapshot);
  REQUIRE(start.first == 30);
  const std::vector<std::byte> emptied =
      lockstep::testing::with_chunk(good, start, start.type, 0, start.first, start.last, {});
  const std::string message = "chunk 2 (start snapshot) at byte " + std::to_string(start.begin) +
                              ": an empty start snapshot, for a replay that starts at tick 30";
  const std::string whole = dir.file("empty-start.lsr");
  lockstep::testing::write_file_bytes(whole, emptied);
  check_refused(whole, message);
  // Cut right after the empty chunk (nothing after it), and inside the inputs that follow it.
  const std::size_t empty_end = chunk_of(emptied, replay::ChunkType::start_snapshot).end;
  for (const std::size_t size : {empty_end, empty_end + 7}) {
    INFO("cut at byte " << size);
    const std::string cut = dir.file("empty-start-cut-" + std::to_string(size) + ".lsr");
    lockstep::testing::write_file_bytes(cut, std::vector<std::byte>(emptied.begin(), emptied.begin() + static_cast<std::ptrdiff_t>(size)));
    check_refused(cut, message);
  }
}

TEST_CASE("a replay whose end hash contradicts the hash it records for that tick is refused in one line; one "
          "that contradicts nothing recorded is played and fails at its end",
          "[replay][hostile]") {
  TempDir dir;
  SECTION("the hash recorded for the last tick") {
    const std::string path = dir.file("a.lsr");
    const std::uint64_t final_hash = lockstep::testing::record_session(path, small_arena(), 5, 120, {1, 60});
    const std::vector<std::byte> good = lockstep::testing::read_file_bytes(path);
    const std::vector<std::byte> bad = with_end_hash(good, final_hash ^ 1);
    lockstep::testing::write_file_bytes(path, bad);
    check_refused(path, "chunk " + std::to_string(lockstep::testing::chunk_spans(bad).size()) + " (end) at byte " +
                            std::to_string(chunk_of(bad, replay::ChunkType::end).begin) + ": the end hash " +
                            hash_hex(final_hash ^ 1) + " contradicts the hash " + hash_hex(final_hash) +
                            " recorded for tick 120");
  }
  SECTION("the start hash of a replay without ticks") {
    const std::string path = dir.file("b.lsr");
    const std::uint64_t start_hash = lockstep::testing::record_session(path, small_arena(), 5, 0, {1, 60});
    const std::vector<std::byte> good = lockstep::testing::read_file_bytes(path);
    REQUIRE(lockstep::testing::chunk_spans(good).size() == 2);  // the header and the end record
    const std::vector<std::byte> bad = with_end_hash(good, start_hash ^ 1);
    lockstep::testing::write_file_bytes(path, bad);
    check_refused(path, "chunk 2 (end) at byte " + std::to_string(chunk_of(bad, replay::ChunkType::end).begin) +
                            ": the end hash " + hash_hex(start_hash ^ 1) + " contradicts the start hash " +
                            hash_hex(start_hash) + " of the same tick 0");
  }
  SECTION("no hash recorded for the last tick: read, and the replay fails there") {
    // Hashes every 60 ticks and 130 ticks: the end record alone vouches for tick 130.
    const std::string path = dir.file("c.lsr");
    const std::uint64_t final_hash = lockstep::testing::record_session(path, small_arena(), 5, 130, {60, 0});
    lockstep::testing::write_file_bytes(path, with_end_hash(lockstep::testing::read_file_bytes(path), final_hash ^ 1));
    REQUIRE(replay::read_replay_file(path).ok());
    const ProcessResult r = run_process(k_lockstep, {"replay", path});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.last_line(), Catch::StartsWith("desync at tick 130: expected " + hash_hex(final_hash ^ 1) + " got " +
                                                hash_hex(final_hash)));
  }
}
