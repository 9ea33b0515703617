// Phase hashes: the hash after each phase of each substep, recorded every K ticks, so that a
// divergence is named by the substep and the phase where two runs first part. A test build of
// the world (support/nudged_world.hpp) changes one value inside one phase of one substep of one
// tick's step, and the player, `replay`, `diff` and `regress` must name exactly that one.

#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/engine/state_hash.hpp"
#include "lockstep/replay/phase_divergence.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep_binary.hpp"
#include "nudged_world.hpp"
#include "process.hpp"
#include "replay_chunks.hpp"
#include "sessions.hpp"

using lockstep::canonical_hash;
using lockstep::PhaseHash;
using lockstep::PhaseNames;
using lockstep::Runner;
using lockstep::World;
using lockstep::WorldConfig;
using lockstep::replay::Player;
using lockstep::replay::PhaseDivergence;
using lockstep::replay::read_replay_file;
using lockstep::replay::RecordOptions;
using lockstep::testing::lockstep_cli;
using lockstep::testing::NudgedWorld;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

const std::string k_nudged = NUDGED_WORLD_BINARY;

template <class S>
Player<S> open_player(const std::string& path) {
  auto file = read_replay_file(path);
  REQUIRE(file.ok());
  auto player = Player<S>::open(std::move(file).value(), false);
  REQUIRE(player.ok());
  return std::move(player).value();
}

/// The hash of the world state (without its tick) a recording holds after `tick`: what the
/// nudged world recognises the step after it by.
std::uint64_t state_after(const std::string& path, std::uint64_t tick) {
  Player<World> player = open_player<World>(path);
  REQUIRE(player.seek(tick).ok());
  return canonical_hash(player.runner().simulation());
}

struct Nudged {
  explicit Nudged(lockstep::testing::Nudge nudge) { NudgedWorld::nudge() = std::move(nudge); }
  ~Nudged() { NudgedWorld::nudge() = {}; }
  Nudged(const Nudged&) = delete;
  Nudged& operator=(const Nudged&) = delete;
};

WorldConfig arena() {
  WorldConfig config = lockstep::testing::small_arena(60);
  config.substeps = 4;
  return config;
}

}  // namespace

TEST_CASE("a world stepped with a probe reaches the same states as without, and its phases come in one order",
          "[replay][phases]") {
  for (const lockstep::Scene scene : {lockstep::Scene::arena, lockstep::Scene::ball, lockstep::Scene::spring}) {
    const WorldConfig config = lockstep::default_world_config(scene);
    auto plain = Runner<World>::create(config, 7);
    auto probed = Runner<World>::create(config, 7);
    REQUIRE(plain.ok());
    REQUIRE(probed.ok());
    PhaseNames names;
    std::vector<PhaseHash> hashes;
    std::vector<lockstep::ButtonInput> inputs(config.players);
    for (std::uint64_t t = 1; t <= 120; ++t) {
      for (std::uint32_t p = 0; p < config.players; ++p) inputs[p].buttons = static_cast<std::uint16_t>((t / 7 + p) % 16);
      const auto a = plain->step(inputs);
      const auto b = probed->step_probed(inputs, names, hashes);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      REQUIRE(a.value() == b.value());
    }
    // Every substep reports its phases in the world's order (the arena has contacts and walls;
    // the labs, open space, neither).
    const std::vector<std::string> phases = scene == lockstep::Scene::arena
                                                ? std::vector<std::string>{"springs", "integration", "ropes", "contacts", "walls"}
                                                : std::vector<std::string>{"springs", "integration", "ropes"};
    REQUIRE(hashes.size() == phases.size() * config.substeps);
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      CHECK(hashes[i].substep == i / phases.size());
      CHECK(names.name(hashes[i].phase) == phases[i % phases.size()]);
    }
  }
}

TEST_CASE("a divergence made inside one phase of one substep is named by that tick, substep and phase",
          "[replay][phases]") {
  TempDir dir;
  const std::string path = dir.file("arena.lsr");
  RecordOptions options;
  options.keyframe_every = 100;
  options.phase_hashes_every = 1;
  lockstep::testing::record_session(path, arena(), 3, 300, options);
  const auto file = read_replay_file(path);
  REQUIRE(file.ok());
  CHECK(file->phase_names == std::vector<std::string>{"springs", "integration", "ropes", "contacts", "walls"});
  CHECK(file->phase_ticks().size() == 300);
  CHECK(file->phases_at(150).size() == 4 * 5);

  for (const char* phase : {"springs", "integration", "ropes", "contacts", "walls"}) {
    for (const std::uint32_t substep : {0u, 2u, 3u}) {
      INFO(phase << " of substep " << substep + 1);
      const Nudged nudged({state_after(path, 211), substep, phase});
      Player<NudgedWorld> player = open_player<NudgedWorld>(path);
      const auto outcome = player.play_to(player.last_tick());
      REQUIRE(outcome.ok());
      REQUIRE(outcome->desync.has_value());
      CHECK(outcome->desync->tick == 212);
      const std::optional<PhaseDivergence> where = lockstep::replay::phase_of_desync(player, outcome->desync->tick);
      REQUIRE(where.has_value());
      CHECK(where->tick == 212);
      CHECK(where->substep == substep);
      CHECK(where->phase == phase);
      CHECK(where->expected != where->actual);
      CHECK(lockstep::replay::describe(*where) == "tick 212, substep " + std::to_string(substep + 1) + ", after " + phase);
    }
  }
}

TEST_CASE("with hashes every 50 ticks and phase hashes every 1, a divergence is found at its own tick, before the "
          "hash that fails",
          "[replay][phases]") {
  TempDir dir;
  const std::string path = dir.file("sparse.lsr");
  RecordOptions options;
  options.hash_every = 50;
  options.keyframe_every = 100;
  options.phase_hashes_every = 1;
  lockstep::testing::record_session(path, arena(), 5, 300, options);
  const Nudged nudged({state_after(path, 136), 1, "contacts"});
  Player<NudgedWorld> player = open_player<NudgedWorld>(path);
  const auto outcome = player.play_to(player.last_tick());
  REQUIRE(outcome.ok());
  REQUIRE(outcome->desync.has_value());
  CHECK(outcome->desync->tick == 150);
  const auto where = lockstep::replay::phase_of_desync(player, 150);
  REQUIRE(where.has_value());
  CHECK(lockstep::replay::describe(*where) == "tick 137, substep 2, after contacts");
}

TEST_CASE("with phase hashes every 10 ticks, a divergence between them is bounded by the last tick whose checkpoints "
          "agree, and one at a phase-hash tick is named exactly",
          "[replay][phases]") {
  TempDir dir;
  const std::string path = dir.file("every-10.lsr");
  RecordOptions options;
  options.hash_every = 50;
  options.keyframe_every = 100;
  options.phase_hashes_every = 10;
  lockstep::testing::record_session(path, arena(), 5, 300, options);
  {
    const Nudged nudged({state_after(path, 136), 1, "contacts"});
    Player<NudgedWorld> player = open_player<NudgedWorld>(path);
    const auto outcome = player.play_to(player.last_tick());
    REQUIRE(outcome.ok());
    REQUIRE(outcome->desync.has_value());
    CHECK(outcome->desync->tick == 150);
    const auto where = lockstep::replay::phase_of_desync(player, 150);
    REQUIRE(where.has_value());
    // Ticks 110 to 130 agree; at 140 the state the step starts from already differs.
    CHECK(lockstep::replay::describe(*where) == "between tick 131 and tick 140, substep 1, after springs");
  }
  {
    const Nudged nudged({state_after(path, 139), 2, "contacts"});
    Player<NudgedWorld> player = open_player<NudgedWorld>(path);
    const auto outcome = player.play_to(player.last_tick());
    REQUIRE(outcome.ok());
    REQUIRE(outcome->desync.has_value());
    const auto where = lockstep::replay::phase_of_desync(player, outcome->desync->tick);
    REQUIRE(where.has_value());
    CHECK(lockstep::replay::describe(*where) == "tick 140, substep 3, after contacts");
  }
}

TEST_CASE("a phase hash chunk the writer would never write is refused, naming the chunk", "[replay][phases][hostile]") {
  TempDir dir;
  RecordOptions options;
  options.keyframe_every = 0;
  options.phase_hashes_every = 20;
  lockstep::testing::record_session(dir.file("good.lsr"), lockstep::testing::small_arena(20), 2, 60, options);
  std::ifstream in(dir.file("good.lsr"), std::ios::binary);
  std::vector<std::byte> bytes;
  for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
  const auto spans = lockstep::testing::chunk_spans(bytes);
  const auto phases = std::find_if(spans.begin(), spans.end(), [](const auto& s) { return s.type == 7; });
  REQUIRE(phases != spans.end());
  REQUIRE(read_replay_file(dir.file("good.lsr")).ok());
  // Payloads of names, then records: each differs from a good one in one way.
  const auto payload = [](std::vector<std::string> names, std::vector<std::vector<std::uint64_t>> records,
                          std::size_t trailing = 0) {
    std::vector<std::byte> out;
    lockstep::ByteWriter w(out);
    w.varint(names.size());
    for (const std::string& n : names) w.text(n);
    w.varint(records.size());
    for (const auto& r : records) {  // {offset, count, then substep, name index pairs}
      w.varint(r[0]);
      w.varint(r[1]);
      for (std::size_t i = 2; i + 1 < r.size(); i += 2) {
        w.varint(r[i]);
        w.varint(r[i + 1]);
        w.u64(0x1234);
      }
    }
    for (std::size_t i = 0; i < trailing; ++i) w.u8(0);
    return out;
  };
  const std::vector<std::string> names = {"springs", "integration"};
  struct Bad {
    const char* what;
    std::vector<std::byte> payload;
    std::uint64_t first;
    std::uint64_t last;
  };
  const std::uint64_t f = phases->first;
  const std::uint64_t l = phases->last;
  std::vector<std::string> many;
  for (int i = 0; i < 65; ++i) many.push_back("p" + std::to_string(i));
  const std::vector<Bad> bad = {
      {"a count over what the chunk holds", payload(names, {{19, 1000, 0, 0}}), f, l},
      {"a name index past the table", payload(names, {{19, 1, 0, 2}}), f, l},
      {"no names", payload({}, {{19, 1, 0, 0}}), f, l},
      {"more than 64 names", payload(many, {{19, 1, 0, 0}}), f, l},
      {"an empty name", payload({"springs", ""}, {{19, 1, 0, 0}}), f, l},
      {"one name twice", payload({"springs", "springs"}, {{19, 1, 0, 0}}), f, l},
      {"ticks that do not ascend", payload(names, {{39, 1, 0, 0}, {19, 1, 0, 0}}), f, l},
      {"a record past the range", payload(names, {{l - f + 1, 1, 0, 0}}), f, l},
      {"bytes after the records", payload(names, {{19, 1, 0, 0}}, 3), f, l},
      {"a range not the inputs chunk's", payload(names, {{0, 1, 0, 0}}), f + 1, l},
      {"a substep over 65535", payload(names, {{19, 1, 70000, 0}}), f, l},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    const std::vector<std::byte> edited = lockstep::testing::with_chunk(bytes, *phases, 7, b.payload.size(), b.first, b.last, b.payload);
    const std::string path = dir.file("bad.lsr");
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(edited.data()), static_cast<std::streamsize>(edited.size()));
    const auto file = read_replay_file(path);
    REQUIRE_FALSE(file.ok());
    CHECK_THAT(file.error().message, Catch::Contains("(phase hashes)"));
  }
  // The same chunk twice is refused too (once per inputs chunk).
  std::vector<std::byte> twice(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(phases->end));
  twice.insert(twice.end(), bytes.begin() + static_cast<std::ptrdiff_t>(phases->begin), bytes.end());
  const std::string path = dir.file("twice.lsr");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(twice.data()), static_cast<std::streamsize>(twice.size()));
  CHECK_FALSE(read_replay_file(path).ok());
}

TEST_CASE("without phase hashes a recording is what it was, and phase hashes are refused where they cannot be",
          "[replay][phases]") {
  TempDir dir;
  RecordOptions plain;
  plain.keyframe_every = 100;
  RecordOptions with_phases = plain;
  with_phases.phase_hashes_every = 10;
  lockstep::testing::record_session(dir.file("plain.lsr"), arena(), 9, 200, plain);
  lockstep::testing::record_session(dir.file("phases.lsr"), arena(), 9, 200, with_phases);
  const auto a = read_replay_file(dir.file("plain.lsr"));
  const auto b = read_replay_file(dir.file("phases.lsr"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->phase_hashes.empty());
  CHECK(a->sizes.phase_hashes == 0);
  CHECK(b->phase_ticks().size() == 20);
  CHECK(b->sizes.total() == a->sizes.total() + b->sizes.phase_hashes);
  REQUIRE(a->hashes.size() == b->hashes.size());
  for (std::size_t i = 0; i < a->hashes.size(); ++i) CHECK((a->hashes[i].tick == b->hashes[i].tick && a->hashes[i].hash == b->hashes[i].hash));
  // Two recordings of one session by one build: their phase hashes agree everywhere.
  lockstep::testing::record_session(dir.file("again.lsr"), arena(), 9, 200, with_phases);
  const auto again = read_replay_file(dir.file("again.lsr"));
  REQUIRE(again.ok());
  CHECK(lockstep::replay::compare_recorded_phases(*b, *again) == std::nullopt);
  // One of another seed parts at its first phase-hash tick.
  lockstep::testing::record_session(dir.file("other.lsr"), arena(), 10, 200, with_phases);
  const auto other = read_replay_file(dir.file("other.lsr"));
  REQUIRE(other.ok());
  const auto parted = lockstep::replay::compare_recorded_phases(*b, *other);
  REQUIRE(parted.has_value());
  CHECK(lockstep::replay::describe(*parted) == "tick 10, substep 1, after springs");

  const ProcessResult lone = lockstep_cli({"run", "--ticks", "10", "--phase-hashes-every", "1"});
  CHECK(lone.exit_code == 2);
  CHECK(lone.err == "error: --phase-hashes-every goes with --record\n");
  const ProcessResult sync = lockstep_cli({"run", "--ticks", "10", "--sync-test", "--record", dir.file("s.lsr"),
                                           "--phase-hashes-every", "1"});
  CHECK(sync.exit_code == 2);
  CHECK(sync.err == "error: --phase-hashes-every and --sync-test step differently: choose one\n");
}

TEST_CASE("replay, diff and regress of the nudged build name the substep and phase; diff of two recordings compares "
          "their phase hashes",
          "[replay][phases][tools]") {
  TempDir dir;
  const std::string path = dir.file("arena.lsr");
  REQUIRE(lockstep_cli({"run", "--scene", "arena", "--bodies", "60", "--ticks", "240", "--seed", "4", "--record", path,
                        "--keyframe-every", "60", "--phase-hashes-every", "1"})
              .exit_code == 0);
  std::ostringstream spec;
  spec << std::hex << state_after(path, 119) << std::dec << ":3:contacts";
  const std::vector<std::string> nudge = {"LOCKSTEP_TEST_NUDGE=" + spec.str()};

  const ProcessResult replayed = run_process(k_nudged, {"replay", path}, nudge);
  INFO(replayed.out << replayed.err);
  CHECK(replayed.exit_code == 1);
  CHECK_THAT(replayed.last_line(), Catch::StartsWith("desync at tick 120: expected ") &&
                                       Catch::EndsWith("; the runs first part at tick 120, substep 3, after contacts"));

  const ProcessResult diffed = run_process(k_nudged, {"diff", path}, nudge);
  CHECK(diffed.exit_code == 1);
  CHECK(diffed.lines().at(0) == "first divergence at tick 120, substep 3, after contacts");

  const ProcessResult regressed = run_process(k_nudged, {"regress", path, "--jsonl", dir.file("r.jsonl")}, nudge);
  CHECK(regressed.exit_code == 1);
  CHECK_THAT(regressed.out, Catch::Contains("; the runs first part at tick 120, substep 3, after contacts"));
  std::ifstream lines(dir.file("r.jsonl"));
  std::string run_line;
  std::string case_line;
  std::getline(lines, run_line);
  std::getline(lines, case_line);
  rapidjson::Document c;
  c.Parse(case_line.c_str());
  REQUIRE(c.IsObject());
  const rapidjson::Value& phase = c["divergence"]["phase"];
  CHECK(phase["tick"].GetUint64() == 120);
  CHECK(phase["substep"].GetUint64() == 3);
  CHECK(std::string(phase["name"].GetString()) == "contacts");

  // The nudged build records its own session: re-simulated here both agree (the nudge is gone),
  // but what the two builds recorded parts where the nudge was.
  const std::string other = dir.file("nudged.lsr");
  REQUIRE(run_process(k_nudged, {"run", "--scene", "arena", "--bodies", "60", "--ticks", "240", "--seed", "4", "--record",
                                 other, "--keyframe-every", "60", "--phase-hashes-every", "1"},
                      nudge)
              .exit_code == 0);
  const ProcessResult two = lockstep_cli({"diff", path, other});
  INFO(two.out << two.err);
  CHECK(two.exit_code == 1);
  const std::vector<std::string> out = two.lines();
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "identical through tick 240 when re-simulated here");
  CHECK(out[1] == "the recorded phase hashes first differ at tick 120, substep 3, after contacts");
}

TEST_CASE("regress --rebaseline writes every replay case re-simulated by the new build elsewhere, says from which "
          "tick each changed, and never touches the originals",
          "[replay][phases][tools][regress]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases/arena"));
  const std::string changed = dir.file("cases/arena/changed.lsr");
  const std::string same = dir.file("cases/same.lsr");
  REQUIRE(lockstep_cli({"run", "--scene", "arena", "--bodies", "60", "--ticks", "240", "--seed", "4", "--record", changed,
                        "--keyframe-every", "60", "--phase-hashes-every", "10"})
              .exit_code == 0);
  REQUIRE(lockstep_cli({"run", "--scene", "ball", "--ticks", "100", "--seed", "2", "--record", same}).exit_code == 0);
  std::ostringstream spec;
  spec << std::hex << state_after(changed, 119) << std::dec << ":2:ropes";
  const std::vector<std::string> nudge = {"LOCKSTEP_TEST_NUDGE=" + spec.str()};
  const auto bytes_of = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string changed_before = bytes_of(changed);
  const std::string same_before = bytes_of(same);

  const ProcessResult r = run_process(k_nudged, {"regress", dir.file("cases"), "--rebaseline", dir.file("out"), "--jsonl",
                                                 dir.file("r.jsonl")},
                                      nudge);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  const std::vector<std::string> lines = r.lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "rebaselined arena/changed.lsr: 240 ticks into " + dir.file("out") + "/arena/changed.lsr; changed from tick 120");
  CHECK(lines[1] == "rebaselined same.lsr: 100 ticks into " + dir.file("out") + "/same.lsr; unchanged");
  CHECK(lines[2] == "0 passed, 0 failed, 2 rebaselined (1 changed)");
  CHECK(bytes_of(changed) == changed_before);
  CHECK(bytes_of(same) == same_before);
  CHECK_THAT(bytes_of(dir.file("r.jsonl")), Catch::Contains("\"verdict\":\"rebaselined\"") &&
                                                Catch::Contains("\"changed_from_tick\":120"));

  // The new baseline holds for the new build and not for the old; it keeps the phase hashes.
  CHECK(run_process(k_nudged, {"replay", dir.file("out/arena/changed.lsr")}, nudge).exit_code == 0);
  const ProcessResult old_build = lockstep_cli({"replay", dir.file("out/arena/changed.lsr")});
  CHECK(old_build.exit_code == 1);
  CHECK_THAT(old_build.last_line(), Catch::StartsWith("desync at tick 120: ") &&
                                        Catch::EndsWith("the runs first part at tick 120, substep 2, after ropes"));
  CHECK(bytes_of(dir.file("out/same.lsr")).size() == same_before.size());

  for (const std::string& inside : {dir.file("cases"), dir.file("cases/arena/new")}) {
    const ProcessResult over = run_process(k_nudged, {"regress", dir.file("cases"), "--rebaseline", inside}, nudge);
    INFO(inside);
    CHECK(over.exit_code == 2);
    CHECK(over.err == "error: --rebaseline '" + inside + "' is inside the folder of cases '" + dir.file("cases") +
                          "': choose a folder outside the cases\n");
    CHECK(bytes_of(changed) == changed_before);
  }
  const ProcessResult holds = run_process(k_nudged, {"regress", changed, "--rebaseline", dir.file("cases")}, nudge);
  CHECK(holds.exit_code == 2);
  CHECK_THAT(holds.err, Catch::Contains("holds the case"));
}

TEST_CASE("a case whose process crashes fails alone, naming the signal, and one past its memory budget fails alone",
          "[tools][regress][jobs]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("cases"));
  const std::string crashing = dir.file("cases/a-crashes.lsr");
  REQUIRE(lockstep_cli({"run", "--scene", "arena", "--bodies", "30", "--ticks", "60", "--seed", "8", "--record", crashing}).exit_code == 0);
  REQUIRE(lockstep_cli({"run", "--scene", "ball", "--ticks", "60", "--record", dir.file("cases/b-fine.lsr")}).exit_code == 0);
  std::ostringstream spec;
  spec << std::hex << state_after(crashing, 30) << std::dec << ":1:integration:abort";
  const ProcessResult r = run_process(k_nudged, {"regress", dir.file("cases"), "-j", "2"}, {"LOCKSTEP_TEST_NUDGE=" + spec.str()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const std::vector<std::string> lines = r.lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "FAIL a-crashes.lsr: its process ended by signal 6 (Aborted)");
  CHECK(lines[1].rfind("PASS b-fine.lsr: ", 0) == 0);
  CHECK(lines[2] == "1 passed, 1 failed");

  // A million bodies want far more than 64 MB: the case's allocation fails, in its process only.
  std::ofstream(dir.file("cases/c-huge.golden")) << "scene arena\nbodies 1000000\nticks 5\ninputs bots\n";
  const ProcessResult memory = lockstep_cli({"regress", dir.file("cases"), "--case-memory-mb", "64"});
  INFO(memory.out << memory.err);
  CHECK(memory.exit_code == 1);
  const std::vector<std::string> out = memory.lines();
  REQUIRE(out.size() == 4);
  CHECK(out[0].rfind("PASS a-crashes.lsr: ", 0) == 0);  // the real world does not crash
  CHECK(out[2] == "FAIL c-huge: ran out of its memory budget of 64 MB");
  CHECK(out[3] == "2 passed, 1 failed");
}
