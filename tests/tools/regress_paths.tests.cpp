// Which cases `regress` runs: folders searched recursively, case files named on the command line,
// a manifest's list; each case named by its path relative to where it was found, in name order,
// and sharded by that name; bad paths, bad manifests and two cases of one name refused in a line.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "lockstep_binary.hpp"
#include "process.hpp"

using lockstep::testing::lockstep_cli;
using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::TempDir;

namespace {

/// The two fast golden cases, spread over folders: a/spring.golden, a/b/ball.golden.
void spread_cases(const TempDir& dir) {
  std::filesystem::create_directories(dir.file("a/b"));
  std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/spring-explicit.golden", dir.file("a/spring.golden"));
  std::filesystem::copy_file(std::string(LOCKSTEP_GOLDEN_DIR) + "/ball-rk4.golden", dir.file("a/b/ball.golden"));
  std::ofstream(dir.file("a/b/notes.txt")) << "not a case\n";
}

/// The names of the cases a run reported, in its order.
std::vector<std::string> reported(const ProcessResult& r) {
  std::vector<std::string> names;
  for (const std::string& line : r.lines()) {
    if (line.rfind("PASS ", 0) == 0 || line.rfind("FAIL ", 0) == 0) names.push_back(line.substr(5, line.find(':') - 5));
  }
  return names;
}

}  // namespace

TEST_CASE("regress searches folders recursively and names each case by its path in the folder", "[tools][regress]") {
  TempDir dir;
  spread_cases(dir);
  const ProcessResult r = lockstep_cli({"regress", dir.file("a")});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(reported(r) == std::vector<std::string>{"b/ball", "spring"});
  CHECK(r.last_line() == "2 passed, 0 failed");
}

TEST_CASE("regress runs the case files it is given and those a manifest lists, each once, in name order",
          "[tools][regress]") {
  TempDir dir;
  spread_cases(dir);
  SECTION("files on the command line") {
    const ProcessResult r = lockstep_cli({"regress", dir.file("a/spring.golden"), dir.file("a/b/ball.golden")});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.last_line() == "2 passed, 0 failed");
  }
  SECTION("a manifest, with comments, blank lines and a case named twice") {
    std::ofstream(dir.file("cases.txt")) << "# the fast ones\n  a/b/ball.golden\n\na/spring.golden   # spring\na/spring.golden\n";
    const ProcessResult r = lockstep_cli({"regress", "--manifest", dir.file("cases.txt")});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(reported(r) == std::vector<std::string>{"a/b/ball", "a/spring"});
  }
  SECTION("a manifest line that names no file, a path that is nothing, two cases of one name") {
    std::ofstream(dir.file("bad.txt")) << "a/spring.golden\na/missing.golden\n";
    const ProcessResult missing = lockstep_cli({"regress", "--manifest", dir.file("bad.txt")});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err == "error: '" + dir.file("bad.txt") + "' line 2: 'a/missing.golden' is not a case file\n");
    const ProcessResult nothing = lockstep_cli({"regress", dir.file("nowhere")});
    CHECK(nothing.exit_code == 2);
    CHECK(nothing.err == "error: '" + dir.file("nowhere") + "' is neither a folder nor a file\n");
    std::filesystem::create_directories(dir.file("c"));
    std::filesystem::copy_file(dir.file("a/spring.golden"), dir.file("c/spring.golden"));
    const ProcessResult twice = lockstep_cli({"regress", dir.file("a"), dir.file("c")});
    CHECK(twice.exit_code == 2);
    CHECK_THAT(twice.err, Catch::StartsWith("error: two cases are named 'spring.golden' ("));
  }
}

TEST_CASE("a case's shard follows its path in the folder, wherever the folder is", "[tools][regress][shard]") {
  TempDir one, two;
  spread_cases(one);
  spread_cases(two);
  for (const char* shard : {"0/2", "1/2"}) {
    const ProcessResult a = lockstep_cli({"regress", one.file("a"), "--shard", shard});
    const ProcessResult b = lockstep_cli({"regress", two.file("a"), "--shard", shard});
    INFO(a.out << b.out);
    CHECK(reported(a) == reported(b));
  }
  const ProcessResult first = lockstep_cli({"regress", one.file("a"), "--shard", "0/2"});
  const ProcessResult second = lockstep_cli({"regress", one.file("a"), "--shard", "1/2"});
  CHECK(reported(first).size() + reported(second).size() == 2);
}
