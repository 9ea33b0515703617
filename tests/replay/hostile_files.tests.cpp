// Files that are valid byte for byte but hostile in what they hold: each is answered within a
// bound on memory (measured in the child process with wait4) and on work, with its documented
// line and exit code. Times are reported in the README's figures, never asserted here.

#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "hostile_replays.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"
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
