// regress runs each case in a process of its own, several at once: the output is the same, in the
// same order, at any -j; cases that can only finish together pass at -j 2 and not at -j 1; a case
// past its budget fails alone, and the others still pass. The cases that wait are two_simulations'
// test-only `.rendezvous` cases (support/rendezvous_case.hpp): they wait for files, never for time,
// and spend no CPU while they wait.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep_binary.hpp"
#include "process.hpp"

using lockstep::testing::k_two_simulations;
using lockstep::testing::lockstep_cli;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

/// The program whose regress runs `.rendezvous` cases besides replays of its walkers.

void copy_golden(const std::string& name, const std::string& to) {
  std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/" + name, to);
}

/// Writes a `.rendezvous` case of these steps ("arrive NAME", "await NAME"); names are files in the
/// folder `markers` beside the cases' folder.
void rendezvous_case(const std::string& path, const std::vector<std::string>& steps) {
  std::ofstream out(path);
  for (const std::string& step : steps) {
    const std::size_t space = step.find(' ');
    out << step.substr(0, space) << " ../markers/" << step.substr(space + 1) << "\n";
  }
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

TEST_CASE("regress -j 2 runs two cases at once: each waits for the other to begin, so both pass at -j 2 and "
          "the first is stopped at its budget at -j 1",
          "[tools][regress][jobs]") {
  // Neither case can end before the other has begun; -j 1 runs them one after the other, so the
  // first waits for a case that has not started until its budget stops it. Nothing here is timed:
  // at -j 2 the budget only keeps a broken -j from hanging the test.
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  std::filesystem::create_directories(dir.file("markers"));
  rendezvous_case(dir.file("cases/a.rendezvous"), {"arrive a", "await b"});
  rendezvous_case(dir.file("cases/b.rendezvous"), {"arrive b", "await a"});
  const ProcessResult together = run_process(k_two_simulations, {"regress", dir.file("cases"), "-j", "2", "--case-timeout", "60"});
  INFO(together.out << together.err);
  CHECK(together.exit_code == 0);
  CHECK(together.lines() == std::vector<std::string>{"PASS a: arrive a, await b", "PASS b: arrive b, await a",
                                                      "2 passed, 0 failed"});

  std::filesystem::remove_all(dir.file("markers"));
  std::filesystem::create_directories(dir.file("markers"));
  const ProcessResult alone = run_process(k_two_simulations, {"regress", dir.file("cases"), "-j", "1", "--case-timeout", "3"});
  INFO(alone.out << alone.err);
  CHECK(alone.exit_code == 1);
  // b found the marker a left before it was stopped.
  CHECK(alone.lines() == std::vector<std::string>{"FAIL a: stopped after its budget of 3 s", "PASS b: arrive b, await a",
                                                  "1 passed, 1 failed"});
}

TEST_CASE("a case past its budget is stopped and fails alone; the cases beside it pass", "[tools][regress][jobs]") {
  // The case in the middle waits for a file nothing writes: it cannot finish, and it spends no CPU
  // while it waits. Its neighbours, a replay of 60 ticks of walkers and a case that only arrives,
  // take milliseconds, a thousandth of the budget, so no load stops them.
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  std::filesystem::create_directories(dir.file("markers"));
  const ProcessResult recorded = run_process(k_two_simulations, {"run", "--ticks", "60", "--record", dir.file("cases/a-walkers.lsr")});
  REQUIRE(recorded.exit_code == 0);
  rendezvous_case(dir.file("cases/b-endless.rendezvous"), {"arrive b", "await nobody"});
  rendezvous_case(dir.file("cases/c-arrives.rendezvous"), {"arrive c"});
  const ProcessResult r = run_process(k_two_simulations, {"regress", dir.file("cases"), "-j", "2", "--case-timeout", "3"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.lines() == std::vector<std::string>{"PASS a-walkers.lsr: 60 ticks, 60 hashes agree",
                                              "FAIL b-endless: stopped after its budget of 3 s",
                                              "PASS c-arrives: arrive c", "2 passed, 1 failed"});
  // It began, and was stopped waiting: what it waits for was never there.
  CHECK(std::filesystem::exists(dir.file("markers/b")));
  CHECK_FALSE(std::filesystem::exists(dir.file("markers/nobody")));
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
