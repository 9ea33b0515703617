// regress runs each case in a process of its own, several at once: the output is the same, in the
// same order, at any -j; a case past its budget fails alone, and the others still pass.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "lockstep_binary.hpp"
#include "process.hpp"

using lockstep::testing::lockstep_cli;
using lockstep::testing::ProcessResult;
using lockstep::testing::TempDir;

namespace {

void copy_golden(const std::string& name, const std::string& to) {
  std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/" + name, to);
}

/// A case that runs for minutes: ten million ticks of the 1,000-body arena, its bots playing.
void endless_case(const std::string& path) {
  std::ofstream(path) << "scene arena\nplayers 4\nbodies 1000\nsubsteps 8\nintegrator semi-implicit\nseed 1\n"
                         "ticks 10000000\ninputs bots\n";
}

}  // namespace

TEST_CASE("regress prints the same lines in the same order at any -j, whatever order its cases finish in",
          "[tools][regress][jobs]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  // The slowest first by name, so that with -j 3 the others finish before it.
  copy_golden("arena-60-8-players-rk4.golden", dir.file("cases/a-arena.golden"));
  copy_golden("ball-rk4.golden", dir.file("cases/b-ball.golden"));
  copy_golden("spring-explicit.golden", dir.file("cases/c-spring.golden"));
  const ProcessResult recorded = lockstep_cli({"run", "--ticks", "90", "--record", dir.file("cases/d-short.lsr")});
  REQUIRE(recorded.exit_code == 0);
  const ProcessResult one = lockstep_cli({"regress", dir.file("cases"), "-j", "1"});
  const ProcessResult three = lockstep_cli({"regress", dir.file("cases"), "-j", "3"});
  INFO(one.out << one.err << three.out << three.err);
  CHECK(one.exit_code == 0);
  CHECK(three.exit_code == 0);
  CHECK(three.out == one.out);
  const std::vector<std::string> lines = three.lines();
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].rfind("PASS a-arena: ", 0) == 0);
  CHECK(lines[1].rfind("PASS b-ball: ", 0) == 0);
  CHECK(lines[2].rfind("PASS c-spring: ", 0) == 0);
  CHECK(lines[3].rfind("PASS d-short.lsr: ", 0) == 0);
  CHECK(lines[4] == "4 passed, 0 failed");
  CHECK(three.err.empty());  // not a terminal: no progress line
}

TEST_CASE("a case past its budget is stopped and fails alone; the cases beside it pass", "[tools][regress][jobs]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  copy_golden("ball-rk4.golden", dir.file("cases/ball.golden"));
  endless_case(dir.file("cases/endless.golden"));
  copy_golden("spring-explicit.golden", dir.file("cases/spring.golden"));
  const ProcessResult r = lockstep_cli({"regress", dir.file("cases"), "-j", "2", "--case-timeout", "1"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const std::vector<std::string> lines = r.lines();
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind("PASS ball: ", 0) == 0);
  CHECK(lines[1] == "FAIL endless: stopped after its budget of 1 s");
  CHECK(lines[2].rfind("PASS spring: ", 0) == 0);
  CHECK(lines[3] == "2 passed, 1 failed");
}

TEST_CASE("regress refuses a -j or budget that is not a whole number in range", "[tools][regress][jobs]") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"regress", "-j", "0"}, {"regress", "-j", "x"},
                                              {"regress", "--case-timeout", "0"}}) {
    const ProcessResult r = lockstep_cli(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("error: ", 0) == 0);
  }
}
