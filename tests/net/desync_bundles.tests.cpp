// A session that stops at a desync, on virtual time: every participant sends its evidence to the
// host, which writes one bundle naming exactly the participants that diverged (read here, and by
// a program's `diff BUNDLE`), and names whoever could not send.

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lockstep/engine/snapshot.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::net::VirtualSessions;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerInput;
using lockstep::testing::WalkerSim;
using net::Outcome;
using std::chrono::seconds;

namespace {

/// The hash of a bundle participant's state (present ones only).
std::uint64_t state_hash(const replay::BundleParticipant& p) {
  WalkerSim sim;
  std::uint64_t tick = 0;
  REQUIRE(decode_snapshot<WalkerSim>(p.state, sim, tick).ok());
  CHECK(tick == 120);
  return Runner<WalkerSim>(std::move(sim), tick).hash();
}

/// Participant `i` of `group` (of `players` players) steps once more after `tick`: a state no
/// one else has.
void diverge(VirtualSessions<WalkerSim>& group, std::size_t i, std::uint64_t tick, std::uint32_t players) {
  group[i].session->debug_perturb(tick, [players](WalkerSim& sim) {
    const std::vector<WalkerInput> push(players, WalkerInput{1});
    (void)sim.step(push);
  });
}

/// A host and `players` − 1 players (and a spectator), those in `diverging` (slots) stepping once
/// more after tick 120; the host's bundle.
replay::EvidenceBundle desync_of(std::uint32_t players, const std::set<std::uint32_t>& diverging,
                                 const testing::TempDir& dir) {
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(300);
  host.evidence_dir = dir.path();
  REQUIRE(group.host({players, 1000}, 5, host, {}, walker_step).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  for (std::uint32_t p = 1; p < players; ++p) group.join(net::Role::player, join, {}, walker_step);
  group.join(net::Role::spectator, join, {}, walker_step);
  for (const std::uint32_t slot : diverging) diverge(group, slot, 120, players);
  // The host ends as soon as it holds everyone's evidence, well inside its 3 s wait.
  net::Instant found_at{0};
  REQUIRE(group.run(seconds(30), [&](net::Instant now) {
    if (found_at == net::Instant{0} && group[0].session->protocol().desync_tick() != 0) found_at = now;
  }));
  REQUIRE(group[0].ended_at.has_value());
  CHECK(*group[0].ended_at - found_at < std::chrono::milliseconds(1500));
  for (std::size_t i = 0; i <= players; ++i) {
    INFO("participant " << i);
    const net::SessionResult& r = *group[i].session->result();
    CHECK(r.outcome == Outcome::desync);
    CHECK(r.desync_tick == 120);
    if (i > 0) CHECK(r.evidence == "sent to the host, which writes the bundle");
  }
  const std::string path = group[0].session->result()->evidence;
  CHECK(std::filesystem::path(path).extension() == ".lsbundle");
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(path);
  REQUIRE(bundle.ok());
  return std::move(bundle).value();
}

}  // namespace

TEST_CASE("a desync of 2, 4 and 8 players where one or two diverge: the host's one bundle holds everyone's "
          "evidence and tells exactly those apart",
          "[net][session][desync][bundle]") {
  struct Case {
    std::uint32_t players;
    std::set<std::uint32_t> diverging;
  };
  for (const Case& c : {Case{2, {1}}, Case{4, {2}}, Case{8, {3, 6}}}) {
    testing::TempDir dir;
    const replay::EvidenceBundle bundle = desync_of(c.players, c.diverging, dir);
    INFO(c.players << " players");
    CHECK(bundle.simulation == WalkerSim::k_name);
    CHECK(bundle.desync_tick == 120);
    REQUIRE(bundle.participants.size() == c.players + 1);  // and the spectator
    const replay::BundleParticipant& host = bundle.participants[0];
    CHECK(host.role == replay::ParticipantRole::host);
    CHECK(host.slot == 0);
    std::set<std::uint32_t> slots;
    for (const replay::BundleParticipant& p : bundle.participants) {
      INFO(replay::participant_name(p) << ": " << p.missing);
      REQUIRE(p.present());
      REQUIRE(p.desync_hash.has_value());
      CHECK(p.desync_hash->bits == 64);
      CHECK(p.desync_hash->value == state_hash(p));
      const bool diverged = p.role != replay::ParticipantRole::spectator && c.diverging.contains(p.slot);
      CHECK((p.desync_hash->value != host.desync_hash->value) == diverged);
      if (p.role != replay::ParticipantRole::spectator) slots.insert(p.slot);
      CHECK(replay::parse_replay(p.replay).ok());
    }
    CHECK(slots.size() == c.players);
    // A program that knows the simulation groups them the same way.
    const std::string path = dir.file("again.lsbundle");
    REQUIRE(replay::write_bundle_file(path, bundle).ok());
    const testing::ProcessResult diff = testing::run_process(testing::k_two_simulations, {"diff", path});
    CHECK(diff.exit_code == 1);
    const std::size_t at = diff.out.find("\ngroup 2: ");
    REQUIRE(at != std::string::npos);
    const std::string second = diff.out.substr(at + 1, diff.out.find('\n', at + 1) - at - 1);
    for (std::uint32_t slot = 1; slot < c.players; ++slot) {
      CHECK((second.find("(slot " + std::to_string(slot) + ")") != std::string::npos) == c.diverging.contains(slot));
    }
  }
}

TEST_CASE("a participant that cannot send its evidence is named in the bundle with why, and the host "
          "writes it after waiting no longer than its wait",
          "[net][session][desync][bundle]") {
  testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(300);
  host.evidence_dir = dir.path();
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  group.join(net::Role::player, join, {}, walker_step);
  group.join(net::Role::player, join, {}, walker_step);
  diverge(group, 1, 120, 3);
  // Slot 2's process dies as the host finds the desync: it sends nothing.
  net::Instant found_at{0};
  REQUIRE(group.run(seconds(30), [&](net::Instant now) {
    if (found_at == net::Instant{0} && group[0].session->protocol().desync_tick() != 0) {
      found_at = now;
      group.kill(2);
    }
  }));
  // It waited its whole wait for slot 2 (nothing of it arrived), and not much longer.
  REQUIRE(group[0].ended_at.has_value());
  CHECK(*group[0].ended_at - found_at >= std::chrono::milliseconds(3000));
  CHECK(*group[0].ended_at - found_at < std::chrono::milliseconds(3500));
  const net::SessionResult& r = *group[0].session->result();
  CHECK(r.outcome == Outcome::desync);
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(r.evidence);
  REQUIRE(bundle.ok());
  REQUIRE(bundle->participants.size() == 3);
  CHECK(bundle->participants[0].present());
  CHECK(bundle->participants[1].present());
  const replay::BundleParticipant& gone = bundle->participants[2];
  CHECK(gone.slot == 2);
  CHECK(gone.missing == "it sent nothing within the 3000 ms the host waits");
  // The host knows the low half of the hash it reported, which agrees with the host's.
  REQUIRE(gone.desync_hash.has_value());
  CHECK(gone.desync_hash->bits == 32);
  CHECK(gone.desync_hash->value == (bundle->participants[0].desync_hash->value & 0xFFFFFFFFu));
}

TEST_CASE("a desync found earlier after the host has asked for evidence: everyone sends its evidence "
          "of the earlier tick, and the bundle holds that",
          "[net][session][desync][bundle]") {
  testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(300, 20);  // inputs 20 ticks ahead: the others step on past a frozen slot 2
  host.evidence_dir = dir.path();
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  group.join(net::Role::player, join, {}, walker_step);
  group.join(net::Role::player, join, {}, walker_step);
  diverge(group, 1, 120, 3);
  diverge(group, 2, 112, 3);
  // Slot 2 freezes at tick 110 for half a second: the host hears of slot 1's divergence at 120
  // first, then of slot 2's at 112.
  std::optional<net::Instant> frozen_at;
  std::set<std::uint64_t> told;
  REQUIRE(group.run(seconds(30), [&](net::Instant now) {
    auto& slow = group[2];
    if (!frozen_at && !slow.hashes.empty() && slow.hashes.rbegin()->first >= 110) {
      frozen_at = now;
      slow.paused = true;
    }
    if (frozen_at && slow.paused && now - *frozen_at >= std::chrono::milliseconds(500)) slow.paused = false;
    if (const std::uint64_t t = group[0].session->protocol().desync_tick(); t != 0) told.insert(t);
  }));
  CHECK(told == std::set<std::uint64_t>{112, 120});
  const net::SessionResult& r = *group[0].session->result();
  CHECK(r.desync_tick == 112);
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(r.evidence);
  REQUIRE(bundle.ok());
  CHECK(bundle->desync_tick == 112);
  for (const replay::BundleParticipant& p : bundle->participants) {
    INFO(replay::participant_name(p) << ": " << p.missing);
    CHECK(p.present());
  }
}

TEST_CASE("resyncing, the host's bundle holds its own state of the desync tick though it writes the bundle "
          "seconds later, and names a participant lost at the desync",
          "[net][session][resync][bundle]") {
  testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(900);
  host.resync = true;
  host.evidence_dir = dir.path();
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  group.join(net::Role::player, join, {}, walker_step);
  group.join(net::Role::player, join, {}, walker_step);
  group.join(net::Role::spectator, join, {}, walker_step);
  diverge(group, 1, 120, 3);
  // The spectator dies as the host finds the desync: the players step on while the host waits its
  // 3 s (180 ticks) for the spectator's evidence.
  std::vector<net::ProtocolEvent> events;
  REQUIRE(group.run(seconds(60), [&](net::Instant) {
    if (!group[3].killed() && group[0].session->protocol().desync_tick() != 0) group.kill(3);
    for (net::ProtocolEvent e; group[0].session->poll_event(e);) events.push_back(e);
  }));
  const auto recorded = std::find_if(events.begin(), events.end(),
                                     [](const net::ProtocolEvent& e) { return net::is<net::event::DesyncRecorded>(e); });
  REQUIRE(recorded != events.end());
  const auto& desync = std::get<net::event::DesyncRecorded>(*recorded);
  CHECK(desync.tick == 120);
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(desync.evidence);
  REQUIRE(bundle.ok());
  REQUIRE(bundle->participants.size() == 4);
  const replay::BundleParticipant& own = bundle->participants[0];
  REQUIRE(own.present());
  CHECK(state_hash(own) == own.desync_hash->value);  // its state of tick 120 (state_hash checks the tick)
  CHECK(own.desync_hash->value == bundle->participants[2].desync_hash->value);  // as the other honest player's
  CHECK(bundle->participants[1].desync_hash->value != own.desync_hash->value);  // the perturbed one apart
  // Named missing: the host stopped waiting, or found it gone first (both 3 s on).
  CHECK_THAT(bundle->participants[3].missing, Catch::Equals("it sent nothing within the 3000 ms the host waits") ||
                                                  Catch::Equals("it left the session before it sent any"));
  CHECK(group[0].session->result()->outcome == Outcome::finished);
}
