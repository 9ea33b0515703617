// `lockstep export` as users run it: real recordings, real processes, and the rows checked
// against states the engine builds on its own (decoded snapshots), never against export's code.

#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"

using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;
using lockstep::testing::k_lockstep;
using lockstep::testing::lockstep_cli;

namespace {

/// The arena state at every 100th tick of `lockstep run --ticks 1000 --seed 8`, stepped here with
/// the same bots, each passed through a snapshot and decoded into a fresh world.
std::vector<lockstep::World> decoded_states() {
  using namespace lockstep;
  const WorldConfig config = default_world_config(Scene::arena);
  Runner<World> runner = Runner<World>::create(config, 8).value();
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(8, p);
  std::vector<ButtonInput> inputs(config.players);
  std::vector<World> states;
  for (std::uint64_t t = 0;; ++t) {
    if (t % 100 == 0) {
      std::vector<std::byte> bytes;
      encode_snapshot(runner.tick(), runner.simulation(), bytes);
      World decoded;
      std::uint64_t tick = 0;
      REQUIRE(decode_snapshot<World>(bytes, decoded, tick).ok());
      REQUIRE(tick == t);
      states.push_back(decoded);
    }
    if (t == 1000) break;
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
    REQUIRE(runner.step(inputs).ok());
  }
  return states;
}

}  // namespace

TEST_CASE("export of a 1,000-tick arena replay every 100 ticks gives 11 JSON lines whose body "
          "positions are the states decoded from snapshots at those ticks",
          "[tools][export]") {
  TempDir dir;
  REQUIRE(lockstep_cli({"run", "--ticks", "1000", "--seed", "8", "--record", dir.file("a.lsr")}).exit_code == 0);
  const ProcessResult exported = lockstep_cli({"export", dir.file("a.lsr"), "--every", "100"});
  REQUIRE(exported.exit_code == 0);
  const std::vector<std::string> lines = exported.lines();
  REQUIRE(lines.size() == 11);
  CHECK(exported.err.find("exported 11 ticks (0 to 1000, every 100)") != std::string::npos);

  const std::vector<lockstep::World> states = decoded_states();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO("line " << i);
    rapidjson::Document row;
    row.Parse<rapidjson::kParseFullPrecisionFlag>(lines[i].c_str());
    REQUIRE_FALSE(row.HasParseError());
    CHECK(row["tick"].GetUint64() == i * 100);
    const lockstep::Runner<lockstep::World> at(states[i], i * 100);
    CHECK(row["hash"].GetString() == lockstep::hash_hex(at.hash()));
    const rapidjson::Value& fields = row["fields"];
    const lockstep::World& world = states[i];
    REQUIRE(world.body_count() > 1000);
    for (std::uint32_t b = 0; b < world.body_count(); ++b) {
      const lockstep::Vec2 p = world.position(lockstep::BodyId{b + 1});  // ids count from 1
      const std::string index = "[" + std::to_string(b) + "]";
      // Exact: %.17g text of a double reads back as the same double.
      REQUIRE(fields[("state.pos_x" + index).c_str()].GetDouble() == p.x);
      REQUIRE(fields[("state.pos_y" + index).c_str()].GetDouble() == p.y);
    }
  }
}

TEST_CASE("export writes CSV with one column per value, selects values by name, and adds inputs",
          "[tools][export]") {
  TempDir dir;
  REQUIRE(lockstep_cli({"run", "--scene", "ball", "--ticks", "50", "--record", dir.file("b.lsr")}).exit_code == 0);

  const ProcessResult csv = lockstep_cli({"export", dir.file("b.lsr"), "--format", "csv", "--every", "10", "--inputs",
                                          "--fields", "pos_x,vel_y[0]", "--from-tick", "20", "--to-tick", "45"});
  REQUIRE(csv.exit_code == 0);
  const std::vector<std::string> lines = csv.lines();
  REQUIRE(lines.size() == 4);  // the header, then ticks 20, 30 and 40
  CHECK(lines[0].rfind("tick,hash,input0,state.pos_x[0]", 0) == 0);
  CHECK(lines[0].find("state.vel_y[0]") != std::string::npos);
  CHECK(lines[0].find("state.vel_x") == std::string::npos);
  CHECK(lines[1].rfind("20,", 0) == 0);
  CHECK(lines[3].rfind("40,", 0) == 0);
  const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
  for (const std::string& line : lines) CHECK(commas(line) == commas(lines[0]));

  const ProcessResult to_file = lockstep_cli({"export", dir.file("b.lsr"), "--output", dir.file("b.jsonl")});
  CHECK(to_file.exit_code == 0);
  CHECK(to_file.out.empty());
  const std::string jsonl = read_file(dir.file("b.jsonl"));
  CHECK(std::count(jsonl.begin(), jsonl.end(), '\n') == 51);
}

TEST_CASE("export refuses what it cannot do with one error line, and never overwrites the replay",
          "[tools][export]") {
  TempDir dir;
  REQUIRE(lockstep_cli({"run", "--scene", "ball", "--ticks", "50", "--record", dir.file("c.lsr")}).exit_code == 0);
  const std::string before = read_file(dir.file("c.lsr"));
  const std::vector<std::vector<std::string>> refused = {
      {"export", dir.file("c.lsr"), "--fields", "no_such_value"},
      {"export", dir.file("c.lsr"), "--to-tick", "51"},
      {"export", dir.file("c.lsr"), "--from-tick", "40", "--to-tick", "30"},
      {"export", dir.file("c.lsr"), "--every", "0"},
      {"export", dir.file("c.lsr"), "--format", "xml"},
      {"export", dir.file("c.lsr"), "--output", dir.file("c.lsr")},
      {"export", dir.file("missing.lsr")},
  };
  for (const std::vector<std::string>& args : refused) {
    std::string command;
    for (const std::string& arg : args) command += arg + " ";
    INFO(command);
    const ProcessResult r = lockstep_cli(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(read_file(dir.file("c.lsr")) == before);
}
