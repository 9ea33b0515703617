// Prediction and rollback (host --rollback W) in whole sessions on the in-memory network and
// virtual time: players step ahead of the confirmed ticks and see their own input within the local
// delay, while everything recorded, hashed and compared comes from confirmed ticks only — so a
// recording made with prediction is byte-identical to the host's and to a lockstep session's of
// the same inputs. Each case names what prediction libraries have got wrong (ggrs #63, #86).

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/net/io/virtual_network.hpp"
#include "process.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::read_file;
using lockstep::testing::TempDir;
using lockstep::net::VirtualSessions;
using lockstep::testing::WalkerInput;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerSim;
using net::Outcome;
using std::chrono::seconds;

namespace {

/// A host and `players - 1` joining players through `link` (each side's sends), every one recording
/// into `dir` (p0.lsr …).
void start(VirtualSessions<WalkerSim>& group, const TempDir& dir, net::HostConfig host, std::uint32_t players,
           net::NetSimConfig link) {
  host.record = dir.file("p0.lsr");
  link.seed = 1;
  REQUIRE(group.host({players, 1000}, 5, host, link, walker_step).ok());
  for (std::uint32_t i = 1; i < players; ++i) {
    net::JoinConfig join = join_config();
    join.record = dir.file("p" + std::to_string(i) + ".lsr");
    link.seed = i + 1;
    group.join(net::Role::player, join, link, walker_step);
  }
}

/// Every participant finished, stepped every tick, agrees at every tick, and recorded the same
/// bytes as the host.
void check_confirmed_agree(VirtualSessions<WalkerSim>& group, const TempDir& dir, std::uint64_t ticks) {
  const std::string host_recording = read_file(dir.file("p0.lsr"));
  REQUIRE(host_recording.size() > 100);
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("participant " << i << ": " << group[i].session->result()->message);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].hashes.size() == ticks);
    CHECK(read_file(dir.file("p" + std::to_string(i) + ".lsr")) == host_recording);
  }
  CHECK(group.agree());
}

}  // namespace

TEST_CASE("with --rollback 12 through 75 ± 10 ms each way, four players see their own input within two "
          "ticks, roll back, and record exactly what the host records",
          "[net][session][prediction]") {
  TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig link;
  link.delay_ms = 65;  // 65 to 85 ms each way: a round trip of 8 to 10 ticks
  link.jitter_ms = 20;
  net::HostConfig host = host_config(1200);
  host.adaptive_delay = true;
  host.prediction_window = 12;
  start(group, dir, host, 4, link);
  REQUIRE(group.run(seconds(120)));
  check_confirmed_agree(group, dir, 1200);
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("player " << i);
    const net::NetStats s = group[i].session->stats();
    CHECK(s.prediction_window == 12);
    REQUIRE(s.input_latency_p99_ticks.has_value());
    CHECK(*s.input_latency_p99_ticks <= 2);
    CHECK(s.rollbacks > 0);
    CHECK(s.resimulated_ticks >= s.rollbacks);
    CHECK(s.prediction_max > 2);   // it did run ahead of the confirmed ticks
    CHECK(s.prediction_max <= 12);  // and never past the window
  }
}

TEST_CASE("a recording made with prediction is byte-identical to one made in lockstep from the same inputs",
          "[net][session][prediction]") {
  TempDir lockstep_dir;
  TempDir predicted_dir;
  net::NetSimConfig link;
  link.delay_ms = 30;
  link.jitter_ms = 20;
  {
    VirtualSessions<WalkerSim> group;
    start(group, lockstep_dir, host_config(600, 3), 3, link);
    REQUIRE(group.run(seconds(60)));
    check_confirmed_agree(group, lockstep_dir, 600);
    CHECK(group[1].session->stats().rollbacks == 0);
    CHECK(*group[1].session->stats().input_latency_p50_ticks >= 3);  // lockstep: the delay, at least
  }
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(600, 3);
  host.prediction_window = 8;
  start(group, predicted_dir, host, 3, link);
  REQUIRE(group.run(seconds(60)));
  check_confirmed_agree(group, predicted_dir, 600);
  CHECK(group[1].session->stats().rollbacks > 0);
  CHECK(read_file(predicted_dir.file("p0.lsr")) == read_file(lockstep_dir.file("p0.lsr")));
}

TEST_CASE("the sync test through a session: a rollback forced every frame with a predictor that is always "
          "wrong changes no confirmed hash and no recorded byte",
          "[net][session][prediction]") {
  TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig link;
  link.delay_ms = 20;
  link.jitter_ms = 10;
  link.loss = 0.05;
  net::HostConfig host = host_config(600, 1);
  host.prediction_window = 8;
  start(group, dir, host, 3, link);
  for (std::size_t i = 0; i < group.size(); ++i) {
    group[i].session->debug_force_rollback(true);
    // Always wrong: a step the bots never give.
    group[i].session->set_predictor([](std::uint32_t, std::uint64_t, const WalkerInput& last) {
      return WalkerInput{static_cast<std::int8_t>(last.step == 1 ? -1 : 1)};
    });
  }
  REQUIRE(group.run(seconds(60)));
  check_confirmed_agree(group, dir, 600);
  for (std::size_t i = 0; i < group.size(); ++i) {
    INFO("player " << i);
    const net::NetStats s = group[i].session->stats();
    CHECK(s.rollbacks > 300);  // about one a frame that showed a predicted state
    CHECK(s.resimulated_ticks > s.rollbacks);
  }
}

TEST_CASE("ggrs #86: at 150 ms each way with a local delay of 0, every re-simulated tick is confirmed "
          "with its own hash, and all agree",
          "[net][session][prediction]") {
  TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig link;
  link.delay_ms = 150;
  net::HostConfig host = host_config(600, 0);
  host.prediction_window = 12;
  host.input_tolerance = 0;  // the player waits at the window's edge, not decided for by the host
  start(group, dir, host, 2, link);
  REQUIRE(group.run(seconds(90)));
  check_confirmed_agree(group, dir, 600);
  // A round trip of 18 ticks and more is past the window: players stall at its edge, and count it.
  const net::NetStats s = group[1].session->stats();
  CHECK(s.prediction_max == 12);
  CHECK(s.stall_ticks > 0);
  CHECK(s.rollbacks > 0);
}

TEST_CASE("a player that stops sending: the others predict at most W ticks, stall until the host decides it "
          "is gone, then go on from its neutral input and finish in agreement",
          "[net][session][prediction]") {
  TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig link;
  link.delay_ms = 10;
  net::HostConfig host = host_config(900, 1);
  host.prediction_window = 8;
  start(group, dir, host, 3, link);
  bool paused = false;
  REQUIRE(group.run(seconds(60), [&](net::Instant) {
    if (!paused && group[2].session->tick() >= 300) {
      paused = true;
      group.kill(2);
    }
  }));
  REQUIRE(paused);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("participant " << i << ": " << group[i].session->result()->message);
    const net::NetStats s = group[i].session->stats();
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].hashes.size() == 900);
    CHECK(s.prediction_max == 8);
    CHECK(s.stall_ticks > 0);
  }
  CHECK(read_file(dir.file("p1.lsr")) == read_file(dir.file("p0.lsr")));
  CHECK(group.agree());
}

TEST_CASE("a desync under prediction is found on confirmed ticks, with evidence from confirmed states",
          "[net][session][prediction][desync]") {
  TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = host_config(300, 1);
  host.prediction_window = 8;
  host.evidence_dir = dir.path();
  net::NetSimConfig link;
  link.delay_ms = 30;
  REQUIRE(group.host({2, 1000}, 5, host, link, walker_step).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  link.seed = 2;
  group.join(net::Role::player, join, link, walker_step);
  group[1].session->debug_perturb(120, [](WalkerSim& sim) {
    std::vector<WalkerInput> push = {WalkerInput{1}, WalkerInput{1}};
    (void)sim.step(push);  // the confirmed state only: no prediction has it
  });
  REQUIRE(group.run(seconds(30)));
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("participant " << i);
    const net::SessionResult& r = *group[i].session->result();
    CHECK(r.outcome == Outcome::desync);
    CHECK(r.desync_tick == 120);
  }
  // The host's bundle holds both participants' evidence from their confirmed states.
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(group[0].session->result()->evidence);
  REQUIRE(bundle.ok());
  REQUIRE(bundle->participants.size() == 2);
  for (const replay::BundleParticipant& p : bundle->participants) {
    REQUIRE(p.present());
    WalkerSim sim;
    std::uint64_t tick = 0;
    REQUIRE(decode_snapshot<WalkerSim>(p.state, sim, tick).ok());
    CHECK(tick == 120);
  }
  CHECK(bundle->participants[0].desync_hash != bundle->participants[1].desync_hash);
}

TEST_CASE("a player whose steps cost too much for W + D + 1 of them to fit a tick predicts less far, and says so",
          "[net][session][prediction]") {
  TempDir dir;
  VirtualSessions<WalkerSim> group;
  net::NetSimConfig link;
  link.delay_ms = 40;
  net::HostConfig host = host_config(600, 1);
  host.prediction_window = 12;
  start(group, dir, host, 2, link);
  // Every step takes 2 ms by this clock: 8.3 steps fit a tick at 60 Hz, so with a local delay of 1
  // at most 6 may be predicted (6 + 1 + 1 steps).
  net::Instant fake{0};
  group[1].session->set_step_clock([&fake] { return fake += std::chrono::microseconds(2000); });
  REQUIRE(group.run(seconds(60)));
  check_confirmed_agree(group, dir, 600);
  const net::NetStats slow = group[1].session->stats();
  CHECK(group[1].session->step_cost_us() == Approx(2000.0));  // each step reads the clock twice
  CHECK(slow.prediction_window == 6);
  CHECK(slow.prediction_max <= 6);
  CHECK(slow.prediction_max >= 4);  // a round trip of 80 ms is about 5 ticks: it still predicts
  CHECK(group[0].session->stats().prediction_window == 12);  // the host's steps cost nothing here
}
