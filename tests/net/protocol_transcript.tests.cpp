// The wire, held byte for byte: every datagram of one seeded session on virtual time — the
// handshake, an adaptive delay, a player joining under way (state transfer through loss), a
// desync resynced from the host's state, a crash and a reclaim, a spectator's goodbye and the
// end — compared with a transcript recorded from a reviewed run. A change to the protocol's
// internals that moves one byte, one datagram or one microsecond fails here, naming the first.
//
// The transcript is rewritten (for a deliberate change of the protocol, with a new version) by
// running this test with LOCKSTEP_RECORD_TRANSCRIPT=1.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "lockstep/net/session.hpp"
#include "process.hpp"
#include "virtual_sessions.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::VirtualSessions;
using lockstep::testing::WalkerInput;
using lockstep::testing::WalkerSim;
using net::Instant;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

WalkerInput transcript_input(std::uint32_t slot, std::uint64_t tick) {
  return WalkerInput{static_cast<std::int8_t>((tick + slot) % 3 == 0 ? 0 : (tick + slot) % 3 == 1 ? 1 : -1)};
}

std::string hex(std::span<const std::byte> bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const std::byte b : bytes) {
    out += k_digits[std::to_integer<unsigned>(b) >> 4];
    out += k_digits[std::to_integer<unsigned>(b) & 15];
  }
  return out;
}

/// Runs the session and returns its transcript: one line per datagram sent, in order —
/// microseconds, sender, destination, bytes in hex.
std::string session_transcript() {
  lockstep::testing::TempDir dir;
  VirtualSessions<WalkerSim> group;
  std::ostringstream transcript;
  group.on_send = [&](std::size_t who, Instant now, const net::Endpoint& to, std::span<const std::byte> bytes) {
    transcript << now.count() << ' ' << who << ' ' << to << ' ' << hex(bytes) << '\n';
  };
  net::HostConfig host = host_config(600);
  host.start_with = 2;
  host.resync = true;
  host.adaptive_delay = true;
  host.evidence_dir = dir.path();
  net::NetSimConfig slow;
  slow.delay_ms = 20;
  slow.jitter_ms = 10;
  slow.seed = 11;
  REQUIRE(group.host({3, 1000}, 5, host, {}, transcript_input).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  group.join(net::Role::player, join, slow, transcript_input);  // 1
  group.join(net::Role::spectator, join);                 // 2
  net::NetSimConfig lossy;
  lossy.loss = 0.1;
  lossy.seed = 12;
  std::optional<std::size_t> late;
  std::optional<net::Reclaim> key;
  Instant killed_at{0};
  std::optional<std::size_t> back;
  std::optional<std::size_t> refused;
  bool spectator_left = false;
  group[1].session->debug_perturb(300, [](WalkerSim& sim) {
    std::vector<WalkerInput> push = {WalkerInput{1}, WalkerInput{1}, WalkerInput{1}};
    (void)sim.step(push);
  });
  const bool ended = group.run(seconds(60), [&](Instant now) {
    const std::uint64_t tick = group[0].session->tick();
    if (!late && tick >= 120) late = group.join(net::Role::player, join, lossy, transcript_input);
    // Every slot is taken: one more player is refused.
    if (late && !refused && tick >= 250) refused = group.join(net::Role::player, join);
    if (late && !key && group[*late].session->tick() >= 380) {
      key = group[*late].session->reclaim();
      group.kill(*late);
      killed_at = now;
    }
    if (key && !back && now - killed_at >= milliseconds(300)) {
      net::JoinConfig again = join;
      again.reclaim = key;
      back = group.join(net::Role::player, again, {}, transcript_input);
    }
    if (!spectator_left && tick >= 450) {
      group[2].session->leave(now);
      spectator_left = true;
    }
  });
  REQUIRE(ended);
  REQUIRE(back);
  REQUIRE(refused);
  CHECK(group[*refused].session->result()->outcome == net::Outcome::refused);
  CHECK(group[0].session->resyncs() == 0);
  CHECK(group[1].session->resyncs() == 1);
  CHECK(group[0].session->result()->outcome == net::Outcome::finished);
  CHECK(group[*back].session->result()->hash == group[0].session->result()->hash);
  return transcript.str();
}

}  // namespace

TEST_CASE("a seeded virtual session sends exactly the datagrams of its recorded transcript",
          "[net][protocol][transcript]") {
  const std::string path = std::string(LOCKSTEP_TEST_DATA_DIR) + "/net/transcripts/session.transcript";
  const std::string now = session_transcript();
  if (const char* record = std::getenv("LOCKSTEP_RECORD_TRANSCRIPT"); record != nullptr && std::string(record) == "1") {
    std::ofstream(path, std::ios::binary) << now;
    WARN("recorded " << path);
  }
  const std::string held = lockstep::testing::read_file(path);
  REQUIRE_FALSE(held.empty());
  std::istringstream a(held);
  std::istringstream b(now);
  std::string want;
  std::string got;
  std::size_t line = 0;
  for (;;) {
    const bool more_want = static_cast<bool>(std::getline(a, want));
    const bool more_got = static_cast<bool>(std::getline(b, got));
    ++line;
    if (!more_want && !more_got) break;
    INFO("datagram " << line << " of the transcript (time us, sender, destination, bytes)");
    REQUIRE(got == want);
  }
  CHECK(line > 1000);
}
