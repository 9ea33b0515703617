// `lockstep run --record`, `replay`, `info`, `diff` and `regress` as users run them: real
// processes, real files, killed recordings.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/engine/rng.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"
#include "test_scale.hpp"

using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::run_process;
using lockstep::testing::RunningProcess;
using lockstep::testing::TempDir;
using lockstep::testing::k_lockstep;
using lockstep::testing::lockstep_cli;

namespace {

std::string final_hash_of(const ProcessResult& r) {
  const std::string line = r.last_line();
  return line.substr(line.rfind(' ') + 1);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("a 10,000-tick arena session of 200 bodies records, verifies, seeks to 9,000 and diffs identical "
          "against a second recording",
          "[tools][replay][slow]") {
  // The length is what this proves (16 keyframes, a seek near the end), not the world's size: the
  // 1,000-body arena's keyframes are written by export's test. 1,300 ticks in the unoptimised build:
  // still two keyframes, a seek to the last and the ticks after.
  const std::uint64_t ticks = lockstep::testing::scaled(10000, 1300);
  const std::uint64_t seeked_ticks = lockstep::testing::scaled(1000, 100);
  const std::string n = std::to_string(ticks);
  const std::string last = std::to_string(ticks - seeked_ticks);
  TempDir dir;
  const ProcessResult recorded = lockstep_cli({"run", "--ticks", n, "--bodies", "200", "--seed", "21", "--record", dir.file("a.lsr")});
  REQUIRE(recorded.exit_code == 0);
  const std::string hash = final_hash_of(recorded);

  const ProcessResult verified = lockstep_cli({"replay", dir.file("a.lsr")});
  CHECK(verified.exit_code == 0);
  CHECK(verified.last_line() == "ok " + n + " ticks verified, " + n + " hashes checked, final hash " + hash);

  const ProcessResult seeked = lockstep_cli({"replay", dir.file("a.lsr"), "--from-tick", last});
  CHECK(seeked.exit_code == 0);
  const std::string seeked_n = std::to_string(seeked_ticks);
  CHECK(seeked.last_line() == "ok " + seeked_n + " ticks verified, " + seeked_n + " hashes checked, final hash " + hash);

  const ProcessResult again = lockstep_cli({"run", "--ticks", n, "--bodies", "200", "--seed", "21", "--record", dir.file("b.lsr")});
  REQUIRE(again.exit_code == 0);
  const ProcessResult diff = lockstep_cli({"diff", dir.file("a.lsr"), dir.file("b.lsr")});
  CHECK(diff.exit_code == 0);
  CHECK(diff.last_line() == "identical through tick " + n);

  const ProcessResult info = lockstep_cli({"info", dir.file("a.lsr")});
  CHECK(info.exit_code == 0);
  CHECK_THAT(info.out, Catch::Contains("complete") &&
                           Catch::Contains(lockstep::testing::k_full_size
                                               ? "keyframes   every 600 ticks, 16 in the file: 600 1200 1800 2400 3000 3600 4200 4800 …"
                                               : "keyframes   every 600 ticks, 2 in the file: 600 1200"));
}

namespace {

/// Waits until a `run --hash-log PATH` has written its hash log's first buffer, which reaches the
/// disk after some hundred ticks: the run is stepping (and catching signals). False after 2 minutes.
bool wait_until_stepping(const std::string& hash_log) {
  for (int waited_ms = 0; waited_ms < 120'000; waited_ms += 20) {
    std::error_code missing;
    const std::uintmax_t size = std::filesystem::file_size(hash_log, missing);
    if (!missing && size > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST_CASE("a recording killed at any moment keeps every complete chunk and plays them",
          "[tools][replay][crash]") {
  TempDir dir;
  lockstep::Rng rng(20261130);
  int played_back = 0;
  const auto attempts = static_cast<int>(lockstep::testing::scaled(16, 8));
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const std::string path = dir.file("killed-" + std::to_string(attempt) + ".lsr");
    const std::string hash_log = path + ".hashes";
    RunningProcess recording(k_lockstep, {"run", "--ticks", "100000000", "--bodies", "200", "--record", path,
                                          "--keyframe-every", "97", "--hash-log", hash_log});
    // Every other attempt is killed at a random moment after the run has stepped some hundred ticks,
    // so that some recordings hold ticks however slow a loaded machine is; the rest at any moment.
    if (attempt % 2 == 1) REQUIRE(wait_until_stepping(hash_log));
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng.below(600)));
    recording.signal(SIGKILL);
    const ProcessResult killed = recording.finish();
    REQUIRE(killed.exit_code == 128 + SIGKILL);

    const ProcessResult played = lockstep_cli({"replay", path});
    std::error_code no_file;
    const auto size = std::filesystem::file_size(path, no_file);
    INFO("attempt " << attempt << ": " << (no_file ? 0 : size) << " bytes\nstdout: " << played.out
                    << "\nstderr: " << played.err);
    if (played.exit_code == 2) {
      // Killed before the header reached the file (or before the file existed): nothing to
      // play, and it says so.
      CHECK((no_file || size < 1024));
      CHECK(std::regex_search(played.err, std::regex("^error: (truncated header|empty file|cannot open)")));
      continue;
    }
    if (played.exit_code == 4) {
      // Killed after the header but before its first chunk of ticks: nothing to verify, and it
      // says so rather than "ok".
      CHECK_THAT(played.last_line(), Catch::StartsWith("unverified: 0 ticks played"));
      continue;
    }
    REQUIRE(played.exit_code == 0);
    CHECK(std::regex_match(played.last_line(), std::regex("ok ([0-9]+) ticks verified, \\1 hashes checked, final hash [0-9a-f]{16}")));
    CHECK(std::regex_search(played.err, std::regex("^note: .* (is truncated at tick [0-9]+, byte [0-9]+|has no end record)")));
    played_back += 1;
  }
  // Chunks go out in single writes, so a kill almost always lands between two (no end record);
  // files cut inside a chunk are covered byte by byte in the format tests.
  CHECK(played_back > 0);
}

TEST_CASE("SIGINT and SIGTERM end a recording cleanly with nothing lost", "[tools][replay][signals]") {
  for (int signal_number : {SIGINT, SIGTERM}) {
    TempDir dir;
    RunningProcess recording(k_lockstep, {"run", "--ticks", "100000000", "--bodies", "200", "--record", dir.file("s.lsr"),
                                          "--hash-log", dir.file("h.log")});
    // Signalled once it is stepping, whatever the machine's load (a signal during the set-up, before
    // the run catches signals, ends it as any program).
    REQUIRE(wait_until_stepping(dir.file("h.log")));
    recording.signal(signal_number);
    const ProcessResult stopped = recording.finish();
    INFO("signal " << signal_number << ": " << stopped.out << stopped.err);
    CHECK(stopped.exit_code == 128 + signal_number);
    REQUIRE(std::regex_match(stopped.last_line(), std::regex("tick [0-9]+ hash [0-9a-f]{16}")));
    const std::string tick = std::regex_replace(stopped.last_line(), std::regex("tick ([0-9]+) hash .*"), "$1");
    const ProcessResult played = lockstep_cli({"replay", dir.file("s.lsr")});
    CHECK(played.exit_code == 0);
    CHECK(played.err.empty());
    CHECK(played.last_line() == "ok " + tick + " ticks verified, " + tick + " hashes checked, final hash " + final_hash_of(stopped));
  }
}

TEST_CASE("replay, info and diff answer bad files with one error line and exit code 2",
          "[tools][replay][errors]") {
  TempDir dir;
  write_file(dir.file("text.lsr"), "definitely not a replay");
  write_file(dir.file("empty.lsr"), "");
  write_file(dir.file("newer.lsr"), std::string("LOCKSTEP") + std::string("\x09\0\0\0\0\0\0\0", 8));
  REQUIRE(lockstep_cli({"run", "--ticks", "90", "--bodies", "50", "--record", dir.file("good.lsr")}).exit_code == 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"replay", dir.file("text.lsr")}, "error: not a lockstep replay file"},
      {{"replay", dir.file("empty.lsr")}, "error: empty file: not a lockstep replay file"},
      {{"replay", dir.file("newer.lsr")}, "error: replay format version 9 is newer than this build's version 2"},
      {{"replay", dir.file("missing.lsr")}, "error: cannot open"},
      {{"replay", dir.file("good.lsr"), "--from-tick", "500"}, "error: ticks 500 to 90 are not within"},
      {{"info", dir.file("text.lsr")}, "error: not a lockstep replay file"},
      {{"diff", dir.file("good.lsr"), dir.file("text.lsr")}, "error: not a lockstep replay file"},
      {{"regress", dir.file("no-such-dir")}, "error: '"},
  };
  for (const auto& [args, error] : cases) {
    const ProcessResult r = lockstep_cli(args);
    INFO(args[0] << " " << args[1] << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith(error));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("a tampered recording reports the desync tick, and diff of two sessions reports the "
          "divergence with fields",
          "[tools][replay][desync]") {
  TempDir dir;
  REQUIRE(lockstep_cli({"run", "--ticks", "300", "--seed", "2", "--record", dir.file("a.lsr")}).exit_code == 0);
  REQUIRE(lockstep_cli({"run", "--ticks", "300", "--seed", "3", "--record", dir.file("c.lsr")}).exit_code == 0);
  const ProcessResult diff = lockstep_cli({"diff", dir.file("a.lsr"), dir.file("c.lsr")});
  CHECK(diff.exit_code == 1);
  CHECK(diff.lines().at(0) == "first divergence at tick 0");
  CHECK_THAT(diff.out, Catch::Contains("(body "));
  const ProcessResult self = lockstep_cli({"diff", dir.file("a.lsr")});
  CHECK(self.exit_code == 0);
  CHECK(self.last_line() == "identical through tick 300");
}

TEST_CASE("regress passes the project's goldens and catches a changed one", "[tools][regress]") {
  // The unoptimised build leaves the 1,000-body case to the optimised one.
  TempDir goldens;
  for (const auto& entry : std::filesystem::directory_iterator(LOCKSTEP_GOLDEN_DIR)) {
    if (lockstep::testing::k_full_size || entry.path().filename().string().rfind("arena-1000", 0) != 0) {
      std::filesystem::copy_file(entry.path(), goldens.file(entry.path().filename().string()));
    }
  }
  const ProcessResult all = lockstep_cli({"regress", goldens.path()});
  INFO(all.out << all.err);
  CHECK(all.exit_code == 0);
  CHECK(std::regex_search(all.last_line(), std::regex("^[0-9]+ passed, 0 failed$")));
  // No path of the build machine is baked in: the default is tests/golden where lockstep runs.
  const ProcessResult elsewhere = run_process("/bin/sh", {"-c", "cd / && exec " + k_lockstep + " regress"});
  CHECK(elsewhere.exit_code == 2);
  CHECK_THAT(elsewhere.err, Catch::StartsWith("error: no golden cases in ./tests/golden"));
  {
    TempDir checkout;
    std::filesystem::create_directories(checkout.file("tests/golden"));
    std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/spring-explicit.golden",
                               checkout.file("tests/golden/spring-explicit.golden"));
    const ProcessResult here = run_process("/bin/sh", {"-c", "cd '" + checkout.path() + "' && exec " + k_lockstep + " regress"});
    CHECK(here.exit_code == 0);
    CHECK(here.last_line() == "1 passed, 0 failed");
  }

  TempDir dir;
  const std::string golden = read_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/spring-explicit.golden");
  REQUIRE_FALSE(golden.empty());
  // Change the held hash of tick 5,000: the case must fail there, naming the tick.
  const std::regex at_5000("hash 5000 ([0-9a-f]{16})");
  std::smatch held;
  REQUIRE(std::regex_search(golden, held, at_5000));
  std::string wrong = held[1].str();
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  write_file(dir.file("changed.golden"), std::regex_replace(golden, at_5000, "hash 5000 " + wrong));
  const ProcessResult changed = lockstep_cli({"regress", dir.path()});
  CHECK(changed.exit_code == 1);
  CHECK_THAT(changed.out, Catch::Contains("FAIL changed: first divergent tick 5000: expected " + wrong + " got " + held[1].str()));

  // --update puts the computed hash back; then it passes.
  CHECK(lockstep_cli({"regress", dir.path(), "--update"}).exit_code == 0);
  const auto body = [](const std::string& text) { return text.substr(text.find('\n')); };  // past the name
  CHECK(body(read_file(dir.file("changed.golden"))) == body(golden));
  CHECK(lockstep_cli({"regress", dir.path()}).exit_code == 0);

  write_file(dir.file("broken.golden"), "scene moon\n");
  const ProcessResult broken = lockstep_cli({"regress", dir.path()});
  CHECK(broken.exit_code == 2);
  CHECK_THAT(broken.err, Catch::StartsWith("error: broken line 1: scene must be"));
}

TEST_CASE("replay counts the hashes it compares, and says unverified with exit code 4 when none "
          "fall in the range",
          "[tools][replay][verify]") {
  TempDir dir;
  const std::string a = dir.file("a.lsr");
  const ProcessResult recorded = lockstep_cli({"run", "--ticks", "1000", "--bodies", "200", "--seed", "3",
                                               "--hash-every", "100", "--keyframe-every", "500", "--record", a});
  REQUIRE(recorded.exit_code == 0);
  const std::string hash = final_hash_of(recorded);

  const ProcessResult all = lockstep_cli({"replay", a});
  CHECK(all.exit_code == 0);
  CHECK(all.last_line() == "ok 1000 ticks verified, 10 hashes checked, final hash " + hash);  // ticks 100, 200, … 1000

  const ProcessResult first = lockstep_cli({"replay", a, "--to-tick", "100"});
  CHECK(first.exit_code == 0);
  CHECK(std::regex_match(first.last_line(), std::regex("ok 100 ticks verified, 1 hashes checked, final hash [0-9a-f]{16}")));

  const ProcessResult between = lockstep_cli({"replay", a, "--from-tick", "101", "--to-tick", "150"});
  CHECK(between.exit_code == 4);
  CHECK(std::regex_match(between.last_line(),
                         std::regex("unverified: 49 ticks played, no recorded hash in range, final hash [0-9a-f]{16}")));

  const ProcessResult empty = lockstep_cli({"replay", a, "--from-tick", "900", "--to-tick", "900"});
  CHECK(empty.exit_code == 2);
  CHECK(std::regex_match(empty.err, std::regex("error: [^\n]*empty range[^\n]*\n")));

  // Without kept hashes only the end record vouches for anything, and keyframes are off by default.
  const std::string b = dir.file("b.lsr");
  REQUIRE(lockstep_cli({"run", "--ticks", "1000", "--bodies", "200", "--seed", "3", "--hash-every", "0", "--record", b})
              .exit_code == 0);
  const ProcessResult b_all = lockstep_cli({"replay", b});
  CHECK(b_all.exit_code == 0);
  CHECK(b_all.last_line() == "ok 1000 ticks verified, 1 hashes checked, final hash " + hash);
  const ProcessResult b_part = lockstep_cli({"replay", b, "--to-tick", "100"});
  CHECK(b_part.exit_code == 4);
  CHECK_THAT(b_part.last_line(), Catch::StartsWith("unverified: 100 ticks played"));

  // A keyframe is trusted only against the recorded hash of its tick, so the recorder refuses
  // keyframes on ticks whose hash it would not keep — before it writes anything.
  const std::string c = dir.file("c.lsr");
  const ProcessResult refused = lockstep_cli({"run", "--ticks", "100", "--hash-every", "7", "--keyframe-every", "50", "--record", c});
  CHECK(refused.exit_code == 2);
  CHECK(std::regex_match(refused.err, std::regex("error: keyframes every 50 ticks need the hash [^\n]*\n")));
  CHECK_FALSE(std::filesystem::exists(c));
}

TEST_CASE("two outputs of one command naming the same file are refused before either is opened",
          "[tools][errors]") {
  TempDir dir;
  const std::string precious = dir.file("precious.lsr");
  write_file(precious, "an earlier recording");
  std::filesystem::create_symlink(precious, dir.file("alias.log"));
  for (const std::string& log : {precious, dir.file("alias.log"), dir.path() + "/./precious.lsr"}) {
    const ProcessResult r = lockstep_cli({"run", "--ticks", "10", "--record", precious, "--hash-log", log});
    INFO(log << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::regex_match(r.err, std::regex("error: --record and --hash-log name the same file [^\n]*\n")));
    CHECK(read_file(precious) == "an earlier recording");
  }
}

TEST_CASE("readers take only regular files: a FIFO, a device and a directory are refused at once",
          "[tools][replay][errors]") {
  TempDir dir;
  const std::string fifo = dir.file("pipe.lsr");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"replay", fifo}, {"info", fifo}, {"replay", "/dev/zero"}, {"info", "/dev/zero"}, {"replay", dir.path()}}) {
    const ProcessResult r = lockstep_cli(args);
    INFO(args[0] << " " << args[1] << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::regex_match(r.err, std::regex("error: '[^']+' is not a regular file \\([a-zA-Z ]+\\)\n")));
  }

  // diff and info take no folder (evidence comes in bundles), and a golden case that is a FIFO.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"diff", dir.path(), dir.path()}, {"info", dir.path()}}) {
    const ProcessResult r = lockstep_cli(args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::regex_match(r.err, std::regex("error: '[^']+' is not a regular file \\(a directory\\)\n")));
  }
  std::filesystem::create_directories(dir.file("golden"));
  REQUIRE(::mkfifo(dir.file("golden/stuck.golden").c_str(), 0600) == 0);
  const ProcessResult regress = lockstep_cli({"regress", dir.file("golden")});
  CHECK(regress.exit_code != 0);
  CHECK_THAT(regress.err, Catch::Contains("is not a regular file (a FIFO)"));
}
