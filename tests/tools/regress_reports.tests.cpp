// regress --jsonl and --junit, and `regress merge`: a line per case that says what a CI system
// and a person debugging need (a failing replay's first divergent tick and the fields that
// differ, checked against `lockstep replay` and `lockstep diff`), JUnit XML that a JUnit parser
// reads, and a merge of shards that equals the unsharded run and refuses what is not all of one run.

#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/cli/detail/regress_reports.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"
#include "replay_chunks.hpp"

using lockstep::cli::CaseReport;
using lockstep::cli::RegressResult;
using lockstep::cli::detail::case_json;
using lockstep::cli::detail::CaseRecord;
using lockstep::cli::detail::parse_case_json;
using lockstep::cli::detail::parse_run_json;
using lockstep::testing::k_lockstep;
using lockstep::testing::lockstep_cli;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

/// `lockstep regress ARGS...` with no scheduler's variables from the test's own environment.
ProcessResult regress(const std::vector<std::string>& args) {
  std::vector<std::string> command = {"-i", k_lockstep, "regress"};
  command.insert(command.end(), args.begin(), args.end());
  return run_process("/usr/bin/env", command);
}

/// A recording of the arena whose inputs were changed after it was written (the chunk resealed,
/// so the file reads whole): re-simulating it parts from its recorded hashes, and its keyframes
/// hold the recorded states. Returns the tick `lockstep replay` says it desyncs at.
std::string tampered_recording(const std::string& path) {
  const std::string original = path + ".original";
  REQUIRE(lockstep_cli({"run", "--ticks", "300", "--seed", "2", "--keyframe-every", "100", "--record", original}).exit_code == 0);
  std::ifstream in(original, std::ios::binary);
  std::vector<std::byte> bytes;
  for (char c; in.get(c);) bytes.push_back(static_cast<std::byte>(c));
  for (const lockstep::testing::ChunkSpan& span : lockstep::testing::chunk_spans(bytes)) {
    if (span.type != 3) continue;  // inputs
    // From the payload's end back: the first edit the reader takes as another input.
    for (std::size_t at = span.payload_end() - 1; at > span.payload; --at) {
      std::vector<std::byte> edited = bytes;
      edited[at] ^= std::byte{0x01};
      lockstep::testing::reseal(edited, span);
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(edited.data()),
                                                   static_cast<std::streamsize>(edited.size()));
      const ProcessResult replayed = lockstep_cli({"replay", path});
      if (replayed.exit_code == 1 && replayed.last_line().rfind("desync at tick ", 0) == 0) {
        const std::string line = replayed.last_line();
        return line.substr(15, line.find(':') - 15);
      }
    }
  }
  FAIL("no edit of the recording's inputs made it desync");
  return {};
}

rapidjson::Document json(const std::string& line) {
  rapidjson::Document d;
  d.Parse(line.c_str());
  REQUIRE_FALSE(d.HasParseError());
  REQUIRE(d.IsObject());
  return d;
}

/// A corpus of `count` quick cases: short ball goldens and, every third, a short recording.
void quick_corpus(const std::string& dir, int count) {
  std::filesystem::create_directories(dir + "/replays");
  for (int i = 0; i < count; ++i) {
    if (i % 3 == 2) {
      REQUIRE(lockstep_cli({"run", "--scene", "ball", "--ticks", "40", "--seed", std::to_string(i), "--record",
                            dir + "/replays/r" + std::to_string(i) + ".lsr"})
                  .exit_code == 0);
    } else {
      write_text(dir + "/ball-" + std::to_string(i) + ".golden", "scene ball\nseed " + std::to_string(i) + "\nticks 30\ninputs bots\n");
    }
  }
  REQUIRE(regress({"--update", dir}).exit_code == 0);
}

}  // namespace

TEST_CASE("regress --jsonl: a run line, then a line per case; a failing replay's names its first divergent tick and "
          "the fields that differ",
          "[tools][regress][reports]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  const std::string desync_tick = tampered_recording(dir.file("cases/changed.lsr"));
  std::filesystem::remove(dir.file("cases/changed.lsr.original"));
  std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/ball-rk4.golden", dir.file("cases/ball.golden"));
  const ProcessResult r = regress({dir.file("cases"), "-j", "2", "--jsonl", dir.file("run.jsonl")});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const std::vector<std::string> out = r.lines();
  REQUIRE(out.size() == 3);
  CHECK(out[0].rfind("PASS ball: 10000 ticks, 100 hashes agree", 0) == 0);
  CHECK(out[1].rfind("FAIL changed.lsr: first divergent tick " + desync_tick + ": expected ", 0) == 0);
  CHECK(out[2] == "1 passed, 1 failed");

  const std::vector<std::string> lines = text_lines(read_text(dir.file("run.jsonl")));
  REQUIRE(lines.size() == 3);
  const rapidjson::Document run = json(lines[0]);
  CHECK(std::string(run["type"].GetString()) == "run");
  CHECK(run["shard"].GetUint64() == 0);
  CHECK(run["shards"].GetUint64() == 1);
  CHECK(run["cases"].GetUint64() == 2);
  CHECK(run["shard_cases"].GetUint64() == 2);

  const rapidjson::Document ball = json(lines[1]);
  CHECK(std::string(ball["name"].GetString()) == "ball");
  CHECK(std::string(ball["path"].GetString()) == "ball.golden");
  CHECK(std::string(ball["kind"].GetString()) == "golden");
  CHECK(std::string(ball["simulation"].GetString()) == "lockstep.world2d");
  CHECK(std::string(ball["verdict"].GetString()) == "passed");
  CHECK(ball["ticks"].GetUint64() == 10000);
  CHECK(ball["hashes_checked"].GetUint64() == 100);
  CHECK(ball["seconds"].GetDouble() > 0);
  CHECK(ball["peak_rss_kb"].GetUint64() > 0);
  CHECK_FALSE(ball.HasMember("divergence"));

  const rapidjson::Document changed = json(lines[2]);
  CHECK(std::string(changed["kind"].GetString()) == "replay");
  CHECK(std::string(changed["verdict"].GetString()) == "failed");
  CHECK("FAIL changed.lsr: " + std::string(changed["message"].GetString()) == out[1]);
  REQUIRE(changed.HasMember("divergence"));
  const rapidjson::Value& d = changed["divergence"];
  CHECK(std::to_string(d["tick"].GetUint64()) == desync_tick);
  CHECK(std::string(d["expected"].GetString()) != std::string(d["actual"].GetString()));
  // The fields compare the first recorded state at or after the divergence with the re-simulated
  // one there, as `lockstep diff` of the file against its own recording does.
  const std::uint64_t fields_tick = d["fields_tick"].GetUint64();
  CHECK(fields_tick >= d["tick"].GetUint64());
  CHECK(fields_tick % 100 == 0);
  const ProcessResult diff = lockstep_cli({"diff", dir.file("cases/changed.lsr"), "--max-fields", "1000"});
  CHECK(diff.lines().at(0) == "first divergence at tick " + desync_tick);
  const rapidjson::Value& fields = d["fields"];
  REQUIRE(fields.Size() > 0);
  CHECK(fields.Size() == std::min<std::uint64_t>(d["fields_differing"].GetUint64(), lockstep::cli::k_case_fields_max));
  for (const rapidjson::Value& f : fields.GetArray()) {
    const std::string path = f["path"].GetString();
    INFO(path);
    CHECK(std::string(f["expected"].GetString()) != std::string(f["actual"].GetString()));
    CHECK_THAT(diff.out, Catch::Contains(path));
  }
}

TEST_CASE("regress --junit writes JUnit XML that a JUnit parser reads, failures with their messages",
          "[tools][regress][reports]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  tampered_recording(dir.file("cases/a <changed> & \"quoted\".lsr"));
  std::filesystem::remove(dir.file("cases/a <changed> & \"quoted\".lsr.original"));
  std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/spring-explicit.golden", dir.file("cases/spring.golden"));
  write_text(dir.file("cases/broken.golden"), "scene nowhere\n");
  const ProcessResult r = regress({dir.file("cases"), "--junit", dir.file("junit.xml")});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);  // an unreadable case
  CHECK(r.last_line() == "1 passed, 1 failed, 1 unreadable");
  // junitparser (Debian's python3-junitparser), the parser CI plugins are built on.
  const ProcessResult parsed = run_process("/usr/bin/python3", {"-c", R"(
import sys
from junitparser import JUnitXml, Failure, Error
xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    print('suite', suite.name, suite.tests, suite.failures, suite.errors)
    for case in suite:
        kinds = [type(r).__name__ for r in case.result]
        print('case', repr(case.name), case.classname, 'time' if case.time >= 0 else 'no time', kinds)
        for r in case.result:
            print('message', r.message)
)", dir.file("junit.xml")});
  INFO(parsed.err);
  REQUIRE(parsed.exit_code == 0);
  const std::vector<std::string> lines = parsed.lines();
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "suite lockstep regress 3 1 1");
  CHECK(lines[1] == "case 'a <changed> & \"quoted\".lsr' regress.replay time ['Failure']");
  CHECK(lines[2].rfind("message first divergent tick ", 0) == 0);
  CHECK(lines[3] == "case 'broken' regress.golden time ['Error']");
  CHECK_THAT(lines[4], Catch::StartsWith("message broken line 1: scene must be"));
  CHECK(lines[5] == "case 'spring' regress.golden time []");
}

TEST_CASE("regress merge of four shards' JSON lines prints the unsharded run, and refuses files that are not all "
          "the shards of one run",
          "[tools][regress][reports][merge]") {
  TempDir dir;
  quick_corpus(dir.file("corpus"), 18);
  // One case that fails (its held final hash changed), so that the merged verdict is a failure.
  std::string broken = read_text(dir.file("corpus/ball-1.golden"));
  const std::size_t held = broken.find("hash 30 ");
  REQUIRE(held != std::string::npos);
  broken.replace(held + 8, 16, std::string(16, '0'));
  write_text(dir.file("corpus/ball-1.golden"), broken);
  const ProcessResult whole = regress({dir.file("corpus"), "-j", "2", "--junit", dir.file("whole.xml")});
  INFO(whole.out << whole.err);
  REQUIRE(whole.exit_code == 1);
  std::vector<std::string> shards;
  for (int i = 0; i < 4; ++i) {
    shards.push_back(dir.file("shard-" + std::to_string(i) + ".jsonl"));
    const ProcessResult shard = regress({dir.file("corpus"), "--shard", std::to_string(i) + "/4", "--jsonl", shards.back()});
    CHECK((shard.exit_code == 0 || shard.exit_code == 1));
  }
  const ProcessResult merged = run_process(k_lockstep, {"regress", "merge", shards[2], shards[0], shards[3], shards[1],
                                                        "--junit", dir.file("merged.xml")});
  INFO(merged.out << merged.err);
  CHECK(merged.exit_code == 1);
  CHECK(merged.out == whole.out);
  CHECK(merged.err.empty());
  CHECK(std::filesystem::exists(dir.file("merged.xml")));

  {  // three of the four are refused, naming the shard that is missing
    const ProcessResult three = run_process(k_lockstep, {"regress", "merge", shards[0], shards[1], shards[3]});
    CHECK(three.exit_code == 2);
    CHECK(three.out.empty());
    CHECK(three.err == "error: regress merge: missing shard 2 of 4 (3 of the run's shards given)\n");
  }
  {  // one shard twice is refused
    const ProcessResult twice = run_process(k_lockstep, {"regress", "merge", shards[0], shards[1], shards[1], shards[3]});
    CHECK(twice.exit_code == 2);
    CHECK(twice.err == "error: regress merge: shard 1/4 is in both '" + shards[1] + "' and '" + shards[1] + "'\n");
  }
  {  // a shard of another run (another case list) is refused
    quick_corpus(dir.file("other"), 17);
    const std::string other = dir.file("other-2.jsonl");
    regress({dir.file("other"), "--shard", "2/4", "--jsonl", other});
    const ProcessResult mixed = run_process(k_lockstep, {"regress", "merge", shards[0], shards[1], other, shards[3]});
    CHECK(mixed.exit_code == 2);
    CHECK_THAT(mixed.err, Catch::StartsWith("error: regress merge: '" + other + "' is not of the run '" + shards[0] + "' is of"));
  }
  {  // a shard whose run was cut short is refused
    std::vector<std::string> lines = text_lines(read_text(shards[2]));
    REQUIRE(lines.size() >= 2);
    lines.pop_back();
    std::string cut;
    for (const std::string& line : lines) cut += line + "\n";
    write_text(dir.file("cut.jsonl"), cut);
    const ProcessResult short_run = run_process(k_lockstep, {"regress", "merge", shards[0], shards[1], dir.file("cut.jsonl"), shards[3]});
    CHECK(short_run.exit_code == 2);
    CHECK_THAT(short_run.err, Catch::Contains("its run did not finish"));
  }
  {  // a file that is not JSON lines, or no file, is refused in one line
    write_text(dir.file("not.jsonl"), "PASS ball: 30 ticks\n");
    for (const std::string& bad : {dir.file("not.jsonl"), dir.file("absent.jsonl"), dir.path()}) {
      const ProcessResult r = run_process(k_lockstep, {"regress", "merge", bad});
      INFO(bad << ": " << r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.rfind("error: regress merge: ", 0) == 0);
      CHECK(r.err.find('\n') == r.err.size() - 1);
    }
  }
}

TEST_CASE("a case line reads back as written, and lines that are not what regress writes are refused by name",
          "[tools][regress][reports]") {
  CaseRecord record;
  record.name = "arena/a";
  record.path = "arena/a.lsr";
  record.seconds = 1.25;
  record.peak_rss_kb = 9120;
  CaseReport& r = record.report;
  r.result = RegressResult::failed;
  r.kind = "replay";
  r.simulation = "lockstep.world2d";
  r.ticks = 812;
  r.hashes_checked = 811;
  r.message = std::string("quote \" backslash \\ tab \t bell \x07 bad byte \xff end");
  r.diverged = true;
  r.divergence.tick = 812;
  r.divergence.expected = 0x0123456789abcdefull;
  r.divergence.actual = 0xfedcba9876543210ull;
  r.divergence.fields_tick = 900;
  r.divergence.fields = {{"bodies[3].position.x", "1.5", "1.25"}};
  r.divergence.fields_differing = 1;
  r.divergence.phase_known = true;
  r.divergence.phase_tick = 812;
  r.divergence.phase_from_tick = 812;
  r.divergence.substep = 2;
  r.divergence.phase = "contacts";
  const std::string line = case_json(record);
  CHECK(line.find('\n') == std::string::npos);
  const auto back = parse_case_json(line);
  REQUIRE(back.ok());
  CHECK(back->name == record.name);
  CHECK(back->path == record.path);
  CHECK(back->report.result == RegressResult::failed);
  CHECK(back->report.ticks == 812);
  CHECK(back->report.message == "quote \" backslash \\ tab \t bell \x07 bad byte \xEF\xBF\xBD end");  // U+FFFD for the bad byte
  CHECK(back->report.divergence.expected == 0x0123456789abcdefull);
  CHECK(back->report.divergence.actual == 0xfedcba9876543210ull);
  CHECK(back->report.divergence.fields_tick == 900);
  REQUIRE(back->report.divergence.fields.size() == 1);
  CHECK(back->report.divergence.fields[0].path == "bodies[3].position.x");
  CHECK(back->report.divergence.fields[0].expected == "1.5");
  CHECK(back->report.divergence.phase_known);
  CHECK(back->report.divergence.substep == 2);
  CHECK(back->report.divergence.phase == "contacts");
  CHECK(back->report.divergence.phase_tick == 812);

  CaseRecord rebaselined = record;
  rebaselined.report = CaseReport{};
  rebaselined.report.result = RegressResult::passed;
  rebaselined.report.kind = "replay";
  rebaselined.report.rebaselined = "out/arena/a.lsr";
  rebaselined.report.changed = true;
  rebaselined.report.changed_from_tick = 120;
  const auto again = parse_case_json(case_json(rebaselined));
  REQUIRE(again.ok());
  CHECK(again->report.rebaselined == "out/arena/a.lsr");
  CHECK(again->report.changed_from_tick == 120);
  std::string passed_with_copy = case_json(rebaselined);
  passed_with_copy.replace(passed_with_copy.find("\"rebaselined\",\"ticks"), 13, "\"passed\"");
  CHECK_FALSE(parse_case_json(passed_with_copy).ok());

  for (const std::string& bad : {std::string(""), std::string("[]"), std::string("{\"type\":\"case\"}"),
                                 std::string(1'000'000, '['), line.substr(0, line.size() - 1),
                                 std::string("{\"type\":\"run\",\"format\":1,\"shard\":4,\"shards\":4,\"cases\":1,\"shard_cases\":1,\"case_list\":\"0000000000000000\"}")}) {
    CHECK_FALSE(parse_case_json(bad).ok());
    CHECK_FALSE(parse_run_json(bad).ok());
  }
  std::string wrong_verdict = line;
  wrong_verdict.replace(wrong_verdict.find("\"failed\""), 8, "\"maybe\"");
  CHECK_THAT(parse_case_json(wrong_verdict).error().message, Catch::Contains("maybe"));
}
