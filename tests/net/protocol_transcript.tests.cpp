// The wire, held byte for byte: every datagram of two seeded sessions on virtual time, each
// compared with a transcript recorded from a reviewed run. The first, open: the handshake, an
// adaptive delay, a player joining under way (state transfer through loss), a desync resynced from
// the host's state, a crash (some of its inputs decided under the input tolerance) and a reclaim,
// a refused joiner, a spectator's goodbye and the end. The second: invite and token connects, a spectator's invite, a hello of another version refused in
// clear, prediction, and a player's NAT rebinding answered with path challenges. A change to the
// protocol's internals that moves one byte, one datagram or one microsecond fails here, naming the
// first.
//
// The transcript is rewritten (for a deliberate change of the protocol, with a new version) by
// running this test with LOCKSTEP_RECORD_TRANSCRIPT=1.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "credential_secrets.hpp"
#include "lockstep/net/session/session.hpp"
#include "process.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::secret_of;
using lockstep::net::VirtualSessions;
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
  host.input_tolerance = net::k_default_input_tolerance;
  host.evidence_dir = dir.path();
  host.test_build = "the transcript's build";  // evidence replays name their build: the same in every one
  net::NetSimConfig slow;
  slow.delay_ms = 20;
  slow.jitter_ms = 10;
  slow.seed = 11;
  REQUIRE(group.host({3, 1000}, 5, host, {}, transcript_input).ok());
  net::JoinConfig join = join_config();
  join.evidence_dir = dir.path();
  join.test_build = host.test_build;
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
  INFO(group[0].session->result()->message);
  CHECK(group[0].session->result()->outcome == net::Outcome::finished);
  CHECK(group[*back].session->result()->hash == group[0].session->result()->hash);
  // The killed player's inputs were decided by the input tolerance until it was back.
  CHECK(group[0].session->stats().decided[2].inputs > 0);
  return transcript.str();
}

/// A second session, for what the first one leaves out: joiners by invite (a player and a
/// spectator) and by connect token, a hello of another version refused in clear, prediction
/// (--rollback 4), and a player whose NAT rebinds its port while it plays (path challenges).
std::string credentials_transcript() {
  VirtualSessions<WalkerSim> group;
  std::ostringstream transcript;
  group.on_send = [&](std::size_t who, Instant now, const net::Endpoint& to, std::span<const std::byte> bytes) {
    transcript << now.count() << ' ' << who << ' ' << to << ' ' << hex(bytes) << '\n';
  };
  net::TokenKey token_key{};
  for (std::size_t i = 0; i < token_key.size(); ++i) token_key[i] = static_cast<std::byte>(7 * i + 1);
  net::HostConfig host = host_config(360);
  host.credentials.open = false;
  host.credentials.player_invite = secret_of(1);
  host.credentials.spectator_invite = secret_of(2);
  host.credentials.token_key = token_key;
  host.credentials.host_id = 9;
  host.credentials.unix_seconds = [] { return std::uint64_t{1'800'000'000}; };
  host.prediction_window = 4;
  net::NetSimConfig slow;
  slow.delay_ms = 60;  // beyond the input delay: players predict, and roll back
  slow.jitter_ms = 10;
  slow.seed = 21;
  REQUIRE(group.host({3, 1000}, 5, host, {}, transcript_input).ok());
  net::JoinConfig by_invite = join_config();
  by_invite.credential.kind = net::CredentialKind::invite;
  by_invite.credential.secret = secret_of(1);
  group.join(net::Role::player, by_invite, slow, transcript_input);  // 1
  std::array<std::byte, net::k_token_random_bytes> random{};
  for (std::size_t i = 0; i < random.size(); ++i) random[i] = static_cast<std::byte>(3 * i + 2);
  const net::ConnectToken token =
      net::mint_token(token_key, {net::Role::player, net::k_no_slot, 1'800'000'600, 9, 0x7777}, random);
  net::JoinConfig by_token = join_config();
  by_token.credential.kind = net::CredentialKind::token;
  by_token.credential.secret = token.secret;
  by_token.credential.token = token.blob;
  group.join(net::Role::player, by_token, slow, transcript_input);  // 2
  net::JoinConfig watching = by_invite;
  watching.credential.secret = secret_of(2);
  group.join(net::Role::spectator, watching);  // 3
  // A joiner of protocol version 7 says hello; the host refuses it in clear.
  std::unique_ptr<net::VirtualSocket> old = group.network().open(VirtualSessions<WalkerSim>::address(9), {});
  std::vector<std::byte> hello;
  net::write_hello(hello, {net::MessageType::hello, 0, 0}, {0x0707});
  hello[2] = std::byte{7};
  old->send(VirtualSessions<WalkerSim>::address(0), hello);
  bool moved = false;
  const bool ended = group.run(seconds(60), [&](Instant) {
    if (!moved && group[1].session->tick() >= 150) {
      group[1].socket->rebind(VirtualSessions<WalkerSim>::address(1, 41001));
      moved = true;
    }
  });
  REQUIRE(ended);
  REQUIRE(moved);
  net::Endpoint from;
  std::vector<std::byte> refusal;
  REQUIRE(old->receive(from, refusal));
  CHECK(net::read_refuse(refusal)->reason == net::RefuseReason::version);
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("participant " << i);
    CHECK(group[i].session->result()->outcome == net::Outcome::finished);
    CHECK(group[i].session->result()->hash == group[0].session->result()->hash);
  }
  CHECK(group[0].session->stats().path_challenges > 0);
  CHECK(group[1].session->stats().rollbacks > 0);
  return transcript.str();
}

/// Compares `now` with the transcript held at `name`, datagram by datagram (or records it there,
/// with LOCKSTEP_RECORD_TRANSCRIPT=1, for a deliberate change of the protocol).
void compare_with_held(const std::string& name, const std::string& now) {
  const std::string path = std::string(LOCKSTEP_TEST_DATA_DIR) + "/net/transcripts/" + name;
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
    INFO("datagram " << line << " of " << name << " (time us, sender, destination, bytes)");
    REQUIRE(got == want);
  }
  CHECK(line > 1000);
}

}  // namespace

TEST_CASE("a seeded virtual session sends exactly the datagrams of its recorded transcript",
          "[net][protocol][transcript]") {
  compare_with_held("session.transcript", session_transcript());
}

TEST_CASE("a seeded session of invited, token and predicting joiners, a refused old version and a moved player "
          "sends exactly the datagrams of its recorded transcript",
          "[net][protocol][transcript]") {
  compare_with_held("credentials.transcript", credentials_transcript());
}
