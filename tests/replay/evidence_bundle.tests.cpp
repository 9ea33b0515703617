// Desync evidence bundles: made from participants' real evidence (EvidenceKeeper, as sessions
// keep it), written, read back, refused whole when cut or corrupted, and read by `lockstep info`,
// `diff`, `replay --participant` as a user runs them.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "desync_bundles.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"

using namespace lockstep;
using lockstep::testing::make_bundle;
using lockstep::testing::k_lockstep;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::TempDir;

namespace {

std::vector<std::byte> encoded(const replay::EvidenceBundle& bundle) {
  Result<std::vector<std::byte>> bytes = replay::encode_bundle(bundle);
  REQUIRE(bytes.ok());
  return std::move(bytes).value();
}

/// `body` (everything between the preamble and the checksum) of a bundle, with a new checksum.
std::vector<std::byte> resealed(std::vector<std::byte> bytes) {
  const std::size_t covered = bytes.size() - 8;
  const std::uint64_t sum = xxh3_64(std::span<const std::byte>(bytes).first(covered));
  bytes.resize(covered);
  ByteWriter(bytes).u64(sum);
  return bytes;
}

void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// The lines of `text` that begin with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
    at = end + 1;
  }
  return lines;
}

}  // namespace

TEST_CASE("a bundle reads back as it was written, and participants that agree cost almost nothing",
          "[replay][bundle]") {
  const replay::EvidenceBundle two = make_bundle(2, {1});
  const replay::EvidenceBundle eight = make_bundle(8, {3, 6}, {5});
  for (const replay::EvidenceBundle* bundle : {&two, &eight}) {
    const std::vector<std::byte> bytes = encoded(*bundle);
    Result<replay::EvidenceBundle> back = replay::parse_bundle(bytes);
    REQUIRE(back.ok());
    CHECK(back->simulation == bundle->simulation);
    CHECK(back->session == bundle->session);
    CHECK(back->desync_tick == bundle->desync_tick);
    CHECK(back->agreed_tick == bundle->agreed_tick);
    REQUIRE(back->participants.size() == bundle->participants.size());
    for (std::size_t i = 0; i < back->participants.size(); ++i) {
      const replay::BundleParticipant& a = bundle->participants[i];
      const replay::BundleParticipant& b = back->participants[i];
      CHECK(a.role == b.role);
      CHECK(a.slot == b.slot);
      CHECK(a.desync_hash == b.desync_hash);
      CHECK(a.missing == b.missing);
      CHECK(a.replay == b.replay);
      CHECK(a.state == b.state);
    }
  }
  // One participant's evidence whole, against the bundle of eight: the other six present ones
  // are coded against the first (two of them diverged at the desync tick, four agree).
  const replay::BundleParticipant& host = eight.participants[0];
  const std::size_t whole = host.replay.size() + host.state.size();
  const std::size_t total = encoded(eight).size();
  CHECK(total < whole + 6 * whole / 10);
}

TEST_CASE("a bundle cut short or changed anywhere is refused in one line, and so are crafted ones with a valid checksum",
          "[replay][bundle][hostile]") {
  const std::vector<std::byte> bytes = encoded(make_bundle(3, {2}, {1}));
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + cut / 64) {
    Result<replay::EvidenceBundle> parsed = replay::parse_bundle(std::span<const std::byte>(bytes).first(cut));
    INFO("cut at " << cut);
    CHECK_FALSE(parsed.ok());
  }
  for (std::size_t at = 0; at < bytes.size(); at += 1 + at / 32) {
    std::vector<std::byte> flipped = bytes;
    flipped[at] ^= std::byte{0x10};
    INFO("flipped byte " << at);
    CHECK_FALSE(replay::parse_bundle(flipped).ok());
  }
  // Fields past the preamble: simulation name (u16 length + text), session, desync and agreed
  // ticks, then the participant count.
  const std::size_t name_at = 16;
  const std::size_t session_at = name_at + 2 + World::k_name.size();
  const std::size_t count_at = session_at + 24;
  const std::size_t first_role_at = count_at + 4;
  struct Craft {
    std::size_t at;
    std::vector<std::uint8_t> value;
    std::string error;
  };
  const std::vector<Craft> crafts = {
      {session_at + 8, {0, 0, 0, 0, 0, 0, 0, 0}, "the bundle's desync tick 0 is outside"},
      {session_at + 16, {200, 0, 0, 0, 0, 0, 0, 0}, "the bundle's agreed tick 200 is not before its desync tick 150"},
      {count_at, {0, 0, 0, 0}, "the bundle lists 0 participants"},
      {count_at, {0xFF, 0xFF, 0xFF, 0x7F}, "the bundle lists 2147483647 participants"},
      {count_at, {4, 0, 0, 0}, "the bundle ends inside participant 3"},
      {first_role_at, {9}, "participant 0 has an unknown role 9"},
      {first_role_at + 1, {1, 0, 0, 0}, "participant 1 is a second player of slot 1"},
      {first_role_at + 5, {2}, "participant 0's hash has 2 bits, not 0, 32 or 64"},
      {first_role_at + 5, {32}, "participant 0's hash "},
      {first_role_at + 5, {0}, "participant 0's hash "},
  };
  for (const Craft& c : crafts) {
    std::vector<std::byte> crafted = bytes;
    for (std::size_t i = 0; i < c.value.size(); ++i) crafted[c.at + i] = std::byte{c.value[i]};
    Result<replay::EvidenceBundle> parsed = replay::parse_bundle(resealed(crafted));
    INFO(c.error);
    REQUIRE_FALSE(parsed.ok());
    CHECK_THAT(parsed.error().message, Catch::StartsWith(c.error));
  }
  CHECK(replay::parse_bundle(std::span<const std::byte>(bytes).first(0)).error().message == "not a lockstep evidence bundle");
}

TEST_CASE("info lists a bundle's participants, diff names exactly those that diverged and their first field, "
          "replay --participant re-simulates one",
          "[replay][bundle][cli]") {
  TempDir dir;
  struct Case {
    std::uint32_t participants;
    std::set<std::uint32_t> diverging;
    std::set<std::uint32_t> missing;
  };
  for (const Case& c : {Case{2, {1}, {}}, Case{4, {2}, {3}}, Case{8, {1, 6}, {4}}}) {
    const replay::EvidenceBundle bundle = make_bundle(c.participants, c.diverging, c.missing);
    const std::string path = dir.file("desync-" + std::to_string(c.participants) + ".lsbundle");
    REQUIRE(replay::write_bundle_file(path, bundle).ok());
    INFO(path);

    const ProcessResult info = run_process(k_lockstep, {"info", path});
    REQUIRE(info.exit_code == 0);
    CHECK(lines_starting(info.out, "  #").size() == c.participants);
    CHECK(lines_starting(info.out, "participants " + std::to_string(c.participants) + ": " +
                                       std::to_string(c.participants - c.missing.size()) + " with evidence")
              .size() == 1);

    const ProcessResult diff = run_process(k_lockstep, {"diff", path});
    CHECK(diff.exit_code == 1);
    // Two groups: the host's, and the diverged (each nudged the same way, so one state).
    const std::vector<std::string> groups = lines_starting(diff.out, "group ");
    REQUIRE(groups.size() == 2);
    for (std::uint32_t i = 0; i < c.participants; ++i) {
      const std::string label = "#" + std::to_string(i) + " (";
      const bool in_second = groups[1].find(label) != std::string::npos;
      CHECK(in_second == c.diverging.contains(i));
      CHECK((groups[0].find(label) != std::string::npos) == !c.diverging.contains(i));
    }
    CHECK_THAT(diff.out, Catch::Contains("fields that differ at tick 150:\n  state.vel_x["));
    CHECK_THAT(diff.out, Catch::Contains("(body 1)"));
    CHECK_THAT(diff.out, Catch::Contains("their evidence replays agree through tick 150"));

    const std::uint32_t diverged = *c.diverging.begin();
    const ProcessResult replayed = run_process(k_lockstep, {"replay", path, "--participant", std::to_string(diverged)});
    CHECK(replayed.exit_code == 0);
    CHECK_THAT(replayed.last_line(), Catch::StartsWith("ok "));
  }
  // A participant whose build steps the same inputs differently: its evidence replay parts from
  // the host's inside the desync tick's step, and diff names where.
  REQUIRE(replay::write_bundle_file(dir.file("builds.lsbundle"), make_bundle(3, {1}, {}, true)).ok());
  const ProcessResult builds = run_process(k_lockstep, {"diff", dir.file("builds.lsbundle")});
  CHECK(builds.exit_code == 1);
  CHECK_THAT(builds.out, Catch::Contains("\n  their evidence replays part at tick 150, substep 3, after contacts\n"));

  // A host that sent nothing and reported no hash: the others are compared among themselves, and
  // the verdict is unverified (4), not "all agree".
  replay::EvidenceBundle hostless = make_bundle(3, {}, {0});
  hostless.participants[0].desync_hash.reset();
  REQUIRE(replay::write_bundle_file(dir.file("hostless.lsbundle"), hostless).ok());
  const ProcessResult unverified = run_process(k_lockstep, {"diff", dir.file("hostless.lsbundle")});
  CHECK(unverified.exit_code == 4);
  CHECK_THAT(unverified.out, Catch::Contains("\ngroup 1: hash "));
  CHECK_THAT(unverified.out, Catch::Contains("\nnot compared: #0 (the host, slot 0) reported no hash and sent no evidence: "));

  const std::string path = dir.file("desync-4.lsbundle");
  const ProcessResult none = run_process(k_lockstep, {"replay", path});
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("is an evidence bundle of 4 participants: name one with --participant N"));
  const ProcessResult gone = run_process(k_lockstep, {"replay", path, "--participant", "3"});
  CHECK(gone.exit_code == 2);
  CHECK(gone.err == "error: #3 (slot 3) sent no evidence: it sent nothing within 2,000 ms\n");
  const ProcessResult past = run_process(k_lockstep, {"replay", path, "--participant", "4"});
  CHECK(past.exit_code == 2);
  CHECK_THAT(past.err, Catch::StartsWith("error: the bundle has participants #0 to #3, not #4"));
  std::vector<std::byte> cut = encoded(make_bundle(2, {1}));
  cut.resize(cut.size() / 2);
  write_file(dir.file("cut.lsbundle"), cut);
  const ProcessResult cut_info = run_process(k_lockstep, {"info", dir.file("cut.lsbundle")});
  CHECK(cut_info.exit_code == 2);
  CHECK(cut_info.err == "error: '" + dir.file("cut.lsbundle") + "': the bundle fails its checksum: it is corrupted or was cut short\n");
}
