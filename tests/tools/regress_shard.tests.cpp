// Sharded regression runs: `--shard I/N` and every scheduler's variables name the same shards,
// the shards of a folder cover each case exactly once, a case's shard never moves when others are
// added, and a shard that is not whole is refused in one line naming what is wrong.

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lockstep/cli/shard.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"

using lockstep::cli::in_shard;
using lockstep::cli::parse_shard;
using lockstep::cli::Shard;
using lockstep::cli::shard_from_environment;
using lockstep::testing::k_lockstep;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

using Variables = std::map<std::string, std::string>;

/// The shard an environment of `variables` names: "I/N", "none", or "error: <message>".
std::string shard_of(const Variables& variables) {
  auto found = shard_from_environment([&](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    return it == variables.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  if (!found) return "error: " + found.error().message;
  if (!*found) return "none";
  return std::to_string((*found)->shard.index) + "/" + std::to_string((*found)->shard.count);
}

/// `lockstep regress ARGS...` in an environment of `variables` alone (so that no scheduler's
/// variables from the test's own environment can shard it).
ProcessResult regress(const std::vector<std::string>& variables, const std::vector<std::string>& args) {
  std::vector<std::string> command = {"-i"};
  command.insert(command.end(), variables.begin(), variables.end());
  command.push_back(k_lockstep);
  command.push_back("regress");
  command.insert(command.end(), args.begin(), args.end());
  return run_process("/usr/bin/env", command);
}

/// `prefix` + i + `suffix` for i in [from, to).
std::vector<std::string> numbered(const std::string& prefix, const std::string& suffix, int from, int to) {
  std::vector<std::string> names;
  for (int i = from; i < to; ++i) names.push_back(prefix + std::to_string(i) + suffix);
  return names;
}

/// `n` distinct names of 1 to 40 bytes, any byte but NUL, from a fixed `seed` (splitmix64).
std::vector<std::string> odd_names(std::size_t n, std::uint64_t seed) {
  std::set<std::string> names;
  std::uint64_t state = seed;
  const auto next = [&] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  };
  while (names.size() < n) {
    std::string name(1 + next() % 40, ' ');
    for (char& c : name) c = static_cast<char>(1 + next() % 255);
    names.insert(name);
  }
  return {names.begin(), names.end()};
}

/// Each name's shard of `count`, asking in_shard of every name in `names` order: a name in no
/// shard or in two fails here.
std::map<std::string, std::uint64_t> shards_of(const std::vector<std::string>& names, std::uint64_t count) {
  std::map<std::string, std::uint64_t> shards;
  for (const std::string& name : names) {
    std::optional<std::uint64_t> found;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (!in_shard(name, {i, count})) continue;
      INFO("'" << name << "' is in shard " << i << " of " << count);
      CHECK_FALSE(found.has_value());
      found = i;
    }
    INFO("'" << name << "' of " << count << " shards");
    CHECK(found.has_value());
    if (found) shards[name] = *found;
  }
  return shards;
}

}  // namespace

TEST_CASE("a shard is I/N with I from 0 to N - 1, and nothing else", "[tools][regress][shard]") {
  CHECK(parse_shard("0/1").value() == Shard{0, 1});
  CHECK(parse_shard("3/4").value() == Shard{3, 4});
  CHECK(parse_shard("999999/1000000").value() == Shard{999999, 1000000});
  for (const char* bad : {"", "4/4", "1/0", "0/0", "-1/4", "1/-4", "01/4", "1/04", "1 /4", "1/4 ", "1/4/5", "a/4",
                          "1", "/4", "1/", "0/1000001", "18446744073709551616/2"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(parse_shard(bad).ok());
  }
}

TEST_CASE("every scheduler's variables name the shard they mean, and the first one set wins", "[tools][regress][shard]") {
  CHECK(shard_of({}) == "none");
  CHECK(shard_of({{"LOCKSTEP_SHARD", "2/5"}}) == "2/5");
  CHECK(shard_of({{"JOB_COMPLETION_INDEX", "3"}, {"LOCKSTEP_SHARDS", "4"}}) == "3/4");
  CHECK(shard_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}) == "2/4");
  CHECK(shard_of({{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "5"}}) == "2/4");
  CHECK(shard_of({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "3"},
                  {"SLURM_ARRAY_TASK_STEP", "2"}}) == "3/4");
  CHECK(shard_of({{"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "3"}}) == "0/3");
  CHECK(shard_of({{"CI_NODE_INDEX", "1"}, {"CI_NODE_TOTAL", "3"}}) == "0/3");  // GitLab counts from 1
  CHECK(shard_of({{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "3"}}) == "2/3");
  // LOCKSTEP_SHARD before any scheduler's.
  CHECK(shard_of({{"LOCKSTEP_SHARD", "1/2"}, {"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}) == "1/2");
}

TEST_CASE("a scheduler's shard that is not whole is refused, naming the variable", "[tools][regress][shard][hostile]") {
  const std::vector<std::pair<Variables, std::string>> cases = {
      {{{"LOCKSTEP_SHARD", "4/4"}}, "LOCKSTEP_SHARD"},
      {{{"JOB_COMPLETION_INDEX", "1"}}, "LOCKSTEP_SHARDS is not set"},
      {{{"JOB_COMPLETION_INDEX", "4"}, {"LOCKSTEP_SHARDS", "4"}}, "JOB_COMPLETION_INDEX"},
      {{{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}, "SLURM_ARRAY_TASK_ID='x'"},
      {{{"SLURM_ARRAY_TASK_ID", "1"}}, "SLURM_ARRAY_TASK_COUNT is not set"},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "3"}}, "SLURM_ARRAY_TASK_MIN=3"},
      {{{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "2"}, {"SLURM_ARRAY_TASK_STEP", "0"}}, "SLURM_ARRAY_TASK_STEP"},
      {{{"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "0"}}, "count must be 1 to"},
      {{{"CI_NODE_INDEX", "0"}, {"CI_NODE_TOTAL", "2"}}, "count from 1"},
      {{{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "2"}}, "CI_NODE_INDEX"},
  };
  for (const auto& [variables, words] : cases) {
    const std::string got = shard_of(variables);
    INFO(got);
    CHECK(got.rfind("error: ", 0) == 0);
    CHECK(got.find(words) != std::string::npos);
  }
}

TEST_CASE("the shards of any set of names cover each name once, spread them, and adding names moves none",
          "[tools][regress][shard]") {
  // Names of the shapes a folder of cases has: flat, in folders, and odd (any byte a path may hold).
  const std::vector<std::vector<std::string>> sets = {
      numbered("case-", ".lsr", 0, 1000), numbered("scenes/ball/seed-", ".golden", 0, 1000), odd_names(1000, 7)};
  const std::vector<std::vector<std::string>> added = {
      numbered("case-", ".lsr", 1000, 1500), numbered("scenes/walkers/seed-", ".golden", 0, 300), odd_names(700, 8)};
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::uint64_t count : {1u, 2u, 3u, 4u, 7u, 16u, 100u}) {
      INFO("set " << s << ", " << count << " shards");
      const std::map<std::string, std::uint64_t> before = shards_of(sets[s], count);
      REQUIRE(before.size() == sets[s].size());
      // A spread, not a pile: no shard of 1,000 names is empty, none holds twice its share.
      if (count <= 16) {
        std::vector<std::size_t> sizes(count);
        for (const auto& [name, shard] : before) ++sizes[shard];
        for (std::size_t size : sizes) {
          CHECK(size > 0);
          CHECK(size <= 2 * (sets[s].size() / count));
        }
      }
      // The grown set, asked in another order (the new names first, the old ones backwards), so
      // that a shard depending on what else is in the run or on the order asked would show.
      std::vector<std::string> grown = added[s];
      grown.insert(grown.end(), sets[s].rbegin(), sets[s].rend());
      const std::map<std::string, std::uint64_t> after = shards_of(grown, count);
      // (random names of the two sets may coincide: each name counts once)
      REQUIRE(after.size() == std::set<std::string>(grown.begin(), grown.end()).size());
      for (const auto& [name, shard] : before) {
        INFO(name);
        CHECK(after.at(name) == shard);
      }
    }
  }
}

TEST_CASE("regress --shard and every scheduler's variables run the same shares, which together are the whole run, "
          "and cases added later move none of the others to another shard",
          "[tools][regress][shard]") {
  TempDir dir;
  for (int i = 0; i < 12; ++i) {
    std::ofstream(dir.file("ball-" + std::to_string(i) + ".golden"))
        << "scene ball\nseed " << i << "\nticks 20\ninputs bots\n";
  }
  REQUIRE(regress({}, {"--update", dir.path()}).exit_code == 0);
  const ProcessResult whole = regress({}, {dir.path()});
  REQUIRE(whole.exit_code == 0);
  const std::vector<std::string> whole_lines = whole.lines();
  std::multiset<std::string> all(whole_lines.begin(), whole_lines.end() - 1);  // without the summary
  REQUIRE(all.size() == 12);

  std::multiset<std::string> joined;
  std::vector<std::vector<std::string>> shard_lines;
  for (int i = 0; i < 4; ++i) {
    const std::string shard = std::to_string(i) + "/4";
    const ProcessResult flagged = regress({}, {"--shard", shard, dir.path()});
    INFO(shard << ": " << flagged.out << flagged.err);
    REQUIRE(flagged.exit_code == 0);
    CHECK(flagged.err.empty());
    const std::vector<std::string> lines = flagged.lines();
    joined.insert(lines.begin(), lines.end() - 1);
    shard_lines.emplace_back(lines.begin(), lines.end() - 1);
    const ProcessResult slurm = regress(
        {"SLURM_ARRAY_TASK_ID=" + std::to_string(i + 1), "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_COUNT=4"}, {dir.path()});
    CHECK(slurm.out == flagged.out);
    CHECK(slurm.err == "regress: shard " + shard + ", from SLURM_ARRAY_TASK_ID=" + std::to_string(i + 1) +
                           " of SLURM_ARRAY_TASK_COUNT=4 from 1\n");
    const ProcessResult kubernetes = regress({"JOB_COMPLETION_INDEX=" + std::to_string(i), "LOCKSTEP_SHARDS=4"}, {dir.path()});
    CHECK(kubernetes.out == flagged.out);
    CHECK_THAT(kubernetes.err, Catch::StartsWith("regress: shard " + shard + ", from JOB_COMPLETION_INDEX="));
    TempDir status;
    const ProcessResult gtest = regress({"GTEST_SHARD_INDEX=" + std::to_string(i), "GTEST_TOTAL_SHARDS=4",
                                         "GTEST_SHARD_STATUS_FILE=" + status.file("understood")},
                                        {dir.path()});
    CHECK(gtest.out == flagged.out);
    CHECK_THAT(gtest.err, Catch::StartsWith("regress: shard " + shard + ", from GTEST_SHARD_INDEX="));
    CHECK(std::filesystem::exists(status.file("understood")));
  }
  CHECK(joined == all);

  // Twelve cases more: each of the first twelve is still in the shard it was in, so a farm that
  // grows keeps each old case on the same node (its history there stays comparable).
  for (int i = 12; i < 24; ++i) {
    std::ofstream(dir.file("ball-" + std::to_string(i) + ".golden"))
        << "scene ball\nseed " << i << "\nticks 20\ninputs bots\n";
  }
  REQUIRE(regress({}, {"--update", dir.path()}).exit_code == 0);
  std::size_t new_cases = 0;
  for (int i = 0; i < 4; ++i) {
    const std::string shard = std::to_string(i) + "/4";
    const ProcessResult grown = regress({}, {"--shard", shard, dir.path()});
    INFO(shard << ": " << grown.out << grown.err);
    REQUIRE(grown.exit_code == 0);
    const std::vector<std::string> lines = grown.lines();
    const std::multiset<std::string> now(lines.begin(), lines.end() - 1);
    for (const std::string& line : shard_lines[static_cast<std::size_t>(i)]) CHECK(now.count(line) == 1);
    new_cases += now.size() - shard_lines[static_cast<std::size_t>(i)].size();
  }
  CHECK(new_cases == 12);

  const ProcessResult bad = regress({}, {"--shard", "4/4", dir.path()});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "error: --shard: '4/4': shard 4 of 4 (shards are 0 to 3)\n");
  const ProcessResult bad_env = regress({"JOB_COMPLETION_INDEX=1"}, {dir.path()});
  CHECK(bad_env.exit_code == 2);
  CHECK(bad_env.err == "error: LOCKSTEP_SHARDS is not set (JOB_COMPLETION_INDEX is)\n");
}
