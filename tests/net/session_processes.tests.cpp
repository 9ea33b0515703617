// Networked lockstep with real `lockstep` processes on loopback: agreement, recordings, a bad
// network, a killed peer, a perturbed peer, hostile datagrams, refusals and a vanished host.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "lockstep/net/wire.hpp"
#include "ports.hpp"
#include "process.hpp"

using lockstep::testing::free_udp_port;
using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::run_process;
using lockstep::testing::RunningProcess;
using lockstep::testing::TempDir;

namespace {

const std::string k_lockstep = LOCKSTEP_BINARY;
const std::regex k_final_line("tick [0-9]+ hash [0-9a-f]{16}");

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

/// A host, three bot peers and a spectator, each recording; returns their results.
std::vector<ProcessResult> five_participants(const TempDir& dir, const std::string& ticks,
                                             const std::vector<std::string>& netsim_host,
                                             const std::vector<std::string>& netsim_peer) {
  const std::string port = std::to_string(free_udp_port());
  const std::string at = "127.0.0.1:" + port;
  RunningProcess host(k_lockstep, with({"host", "--port", port, "--players", "4", "--bot", "--ticks", ticks,
                                        "--record", dir.file("host.lsr")}, netsim_host));
  pause_ms(200);
  std::vector<std::unique_ptr<RunningProcess>> others;
  for (int p = 1; p <= 3; ++p) {
    std::vector<std::string> extra = netsim_peer;
    for (std::string& e : extra) e = std::regex_replace(e, std::regex("seed=[0-9]+"), "seed=" + std::to_string(p));
    others.push_back(std::make_unique<RunningProcess>(
        k_lockstep, with({"join", at, "--bot", "--record", dir.file("peer" + std::to_string(p) + ".lsr")}, extra)));
  }
  others.push_back(std::make_unique<RunningProcess>(
      k_lockstep, with({"spectate", at, "--record", dir.file("spectator.lsr")}, netsim_peer)));
  std::vector<ProcessResult> results = {host.finish()};
  for (auto& p : others) results.push_back(p->finish());
  return results;
}

void check_agreement(const TempDir& dir, const std::vector<ProcessResult>& results, const std::string& ticks) {
  for (const ProcessResult& r : results) {
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(std::regex_match(r.last_line(), k_final_line));
    CHECK(r.last_line() == results.front().last_line());
    CHECK_THAT(r.out, Catch::Contains("net (session): tick " + ticks + ", rtt"));
  }
  const std::string host_recording = read_file(dir.file("host.lsr"));
  REQUIRE(host_recording.size() > 100);
  for (const char* name : {"peer1.lsr", "peer2.lsr", "peer3.lsr", "spectator.lsr"}) {
    INFO(name);
    CHECK(read_file(dir.file(name)) == host_recording);
  }
  const ProcessResult verified = run_process(k_lockstep, {"replay", dir.file("peer2.lsr")});
  CHECK(verified.exit_code == 0);
  const std::string hash = results.front().last_line().substr(results.front().last_line().rfind(' ') + 1);
  CHECK(verified.last_line() == "ok " + ticks + " ticks verified, " + ticks + " hashes checked, final hash " + hash);
}

/// Says hello from `socket` like a joiner, answering the host's challenge; returns the welcome,
/// and any refusal seen on the way.
struct RawHandshake {
  std::optional<lockstep::net::Welcome> welcome;
  std::optional<lockstep::net::Refuse> refusal;
  int challenges = 0;
};

RawHandshake raw_handshake(boost::asio::ip::udp::socket& socket, const boost::asio::ip::udp::endpoint& to,
                           lockstep::net::Role role) {
  using namespace lockstep;
  using namespace lockstep::net;
  RawHandshake out;
  std::vector<std::byte> d;
  write_hello(d, {MessageType::hello, k_no_slot, 0, 0, 1}, {k_protocol_version, role, 0});
  socket.send_to(boost::asio::buffer(d.data(), d.size()), to);
  std::vector<std::byte> buffer(2048);
  boost::asio::ip::udp::endpoint from;
  for (int i = 0; i < 50 && !out.welcome; ++i) {
    const std::size_t n = socket.receive_from(boost::asio::buffer(buffer), from);
    const std::span<const std::byte> got(buffer.data(), n);
    Result<Header> h = read_header(got);
    if (!h) continue;
    if (h->type == MessageType::welcome) out.welcome = read_welcome(got).value();
    if (h->type == MessageType::refuse) out.refusal = read_refuse(got).value();
    if (h->type == MessageType::challenge) {
      ++out.challenges;
      write_hello(d, {MessageType::hello, k_no_slot, 0, 0, 2}, {k_protocol_version, role, read_challenge(got)->cookie});
      socket.send_to(boost::asio::buffer(d.data(), d.size()), to);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a host, three bot peers and a spectator finish 2,000 ticks in agreement with identical "
          "recordings",
          "[net][processes][slow]") {
  TempDir dir;
  check_agreement(dir, five_participants(dir, "2000", {}, {}), "2000");
}

TEST_CASE("the same session through 20% loss, 10% duplication, 10% reordering and 40±20 ms",
          "[net][processes][netsim][slow]") {
  TempDir dir;
  const std::vector<std::string> host_netsim = {"--netsim", "loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,seed=9"};
  const std::vector<std::string> peer_netsim = {"--netsim", "loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,seed=1"};
  const std::vector<ProcessResult> results = five_participants(dir, "2000", host_netsim, peer_netsim);
  check_agreement(dir, results, "2000");
  CHECK_THAT(results.front().out, Catch::Contains("simulated loss"));
}

TEST_CASE("a peer killed mid-game is detected and the others finish in agreement",
          "[net][processes][disconnect]") {
  const std::string port = std::to_string(free_udp_port());
  const std::string at = "127.0.0.1:" + port;
  RunningProcess host(k_lockstep, {"host", "--port", port, "--players", "4", "--bot", "--ticks", "420",
                                   "--notify-ms", "300", "--timeout-ms", "1000"});
  pause_ms(200);
  RunningProcess a(k_lockstep, {"join", at, "--bot"});
  RunningProcess b(k_lockstep, {"join", at, "--bot"});
  RunningProcess victim(k_lockstep, {"join", at, "--bot"});
  pause_ms(2500);
  victim.signal(SIGKILL);
  const ProcessResult killed = victim.finish();
  const ProcessResult h = host.finish();
  const ProcessResult ra = a.finish();
  const ProcessResult rb = b.finish();
  CHECK(killed.exit_code == 128 + SIGKILL);
  for (const ProcessResult* r : {&h, &ra, &rb}) {
    INFO(r->out << r->err);
    CHECK(r->exit_code == 0);
    CHECK(std::regex_match(r->last_line(), std::regex("tick 420 hash [0-9a-f]{16}")));
    CHECK(r->last_line() == h.last_line());
  }
  CHECK(std::regex_search(h.out, std::regex("host: player [0-9] is silent \\(interrupted\\)")));
  CHECK(std::regex_search(h.out, std::regex("host: player [0-9] is gone; its input is neutral from tick [0-9]+")));
  CHECK(std::regex_search(ra.out, std::regex("peer: player [0-9] is gone; neutral from tick [0-9]+")));
}

TEST_CASE("a peer that quits cleanly is gone at once and the others finish in agreement",
          "[net][processes][disconnect]") {
  TempDir dir;
  const std::string port = std::to_string(free_udp_port());
  const std::string at = "127.0.0.1:" + port;
  RunningProcess host(k_lockstep, {"host", "--port", port, "--players", "3", "--bot", "--ticks", "300"});
  pause_ms(200);
  RunningProcess stays(k_lockstep, {"join", at, "--bot"});
  RunningProcess leaves(k_lockstep, {"join", at, "--bot", "--record", dir.file("leaver.lsr")});
  pause_ms(2000);
  leaves.signal(SIGTERM);
  const ProcessResult left = leaves.finish();
  const ProcessResult h = host.finish();
  const ProcessResult s = stays.finish();
  INFO(h.out << left.out << left.err);
  CHECK(left.exit_code == 0);
  CHECK(std::regex_search(left.out, std::regex("peer: left the session at tick [0-9]+")));
  CHECK(std::regex_search(h.out, std::regex("host: player [0-9] left; neutral from tick [0-9]+")));
  CHECK_FALSE(std::regex_search(h.out, std::regex("interrupted")));
  CHECK(h.exit_code == 0);
  CHECK(s.exit_code == 0);
  CHECK(std::regex_match(h.last_line(), std::regex("tick 300 hash [0-9a-f]{16}")));
  CHECK(s.last_line() == h.last_line());
  CHECK(run_process(k_lockstep, {"replay", dir.file("leaver.lsr")}).exit_code == 0);
}

TEST_CASE("a perturbed peer makes every participant stop with the desync tick and evidence that "
          "diff explains",
          "[net][processes][desync]") {
  TempDir dir;
  const std::string port = std::to_string(free_udp_port());
  const std::string at = "127.0.0.1:" + port;
  RunningProcess host(k_lockstep, {"host", "--port", port, "--players", "3", "--bot", "--ticks", "1200",
                                   "--evidence-dir", dir.path()});
  pause_ms(200);
  RunningProcess honest(k_lockstep, {"join", at, "--bot", "--evidence-dir", dir.path()});
  RunningProcess perturbed(k_lockstep, {"join", at, "--bot", "--debug-perturb-tick", "150", "--evidence-dir", dir.path()});
  std::vector<ProcessResult> results = {host.finish(), honest.finish(), perturbed.finish()};
  std::vector<std::string> bundles;
  for (const ProcessResult& r : results) {
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    const std::vector<std::string> lines = r.lines();
    REQUIRE(lines.size() >= 2);
    std::smatch tick;
    REQUIRE(std::regex_match(lines[lines.size() - 2], tick, std::regex("desync at tick ([0-9]+)")));
    const int at_tick = std::stoi(tick[1].str());
    CHECK(at_tick >= 150);
    CHECK(at_tick <= 152);
    REQUIRE(std::regex_match(lines.back(), std::regex("evidence: .*")));
    bundles.push_back(lines.back().substr(std::string("evidence: ").size()));
    CHECK(std::filesystem::exists(bundles.back() + "/replay.lsr"));
    CHECK(std::filesystem::exists(bundles.back() + "/state.snapshot"));
    CHECK(std::filesystem::exists(bundles.back() + "/config.json"));
  }
  const ProcessResult diff = run_process(k_lockstep, {"diff", bundles[1], bundles[2]});
  INFO(diff.out << diff.err);
  CHECK(diff.exit_code == 1);
  CHECK_THAT(diff.out, Catch::StartsWith("first divergence at tick 15"));
  CHECK_THAT(diff.out, Catch::Contains("state.vel_x[0] (body 1):"));
  const ProcessResult same = run_process(k_lockstep, {"diff", bundles[0], bundles[1]});
  CHECK(same.exit_code == 0);
  const ProcessResult replay = run_process(k_lockstep, {"replay", bundles[2] + "/replay.lsr"});
  CHECK(replay.exit_code == 0);
}

TEST_CASE("hostile datagrams sent at the host during a session are dropped and counted, and the "
          "session finishes unharmed",
          "[net][processes][hostile]") {
  using namespace lockstep;
  using namespace lockstep::net;
  namespace asio = boost::asio;
  const std::uint16_t port = free_udp_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  RunningProcess host(k_lockstep, {"host", "--port", std::to_string(port), "--players", "2", "--bot", "--ticks", "360"});
  pause_ms(200);
  RunningProcess peer(k_lockstep, {"join", at, "--bot"});
  pause_ms(1500);

  asio::io_context io;
  asio::ip::udp::socket socket(io, asio::ip::udp::endpoint(asio::ip::udp::v4(), 0));
  const asio::ip::udp::endpoint to(asio::ip::make_address("127.0.0.1"), port);
  auto send = [&](const std::vector<std::byte>& bytes) { socket.send_to(asio::buffer(bytes.data(), bytes.size()), to); };
  std::vector<std::byte> d;
  Update update;
  update.first_tick = 1;
  update.inputs = std::vector<std::byte>(2);

  // Before any handshake: malformed and from an unknown address.
  send(std::vector<std::byte>(5));                                   // short
  send(std::vector<std::byte>(k_max_datagram_bytes + 100));          // oversized
  write_update(d, {MessageType::update, 1, 1, 1, 1}, update, 2);
  std::vector<std::byte> bad = d;
  bad[0] = std::byte{0};
  send(bad);                                                         // bad magic
  bad = d;
  bad[4] = std::byte{77};
  send(bad);                                                         // bad version
  send(d);                                                           // unknown address
  write_hello(d, {MessageType::hello, k_no_slot, 0, 0, 1}, {k_protocol_version, Role::spectator});
  d[4] = std::byte{9};
  send(d);                                                           // a hello of protocol version 9

  // Join as a spectator to get an address the host knows, then abuse it.
  const RawHandshake joined = raw_handshake(socket, to, Role::spectator);
  REQUIRE(joined.welcome.has_value());
  CHECK(joined.challenges == 1);
  REQUIRE(joined.refusal.has_value());
  CHECK(joined.refusal->text == "protocol version 9 is not the host's 1");
  const std::uint64_t session = joined.welcome.value().session;
  const std::uint64_t token = joined.welcome.value().token;
  write_update(d, {MessageType::update, k_no_slot, session + 1, token, 10}, {}, 2);
  send(d);                                                           // wrong session
  write_update(d, {MessageType::update, 0, session, token, 11}, update, 2);
  send(d);                                                           // forged slot: speaking for player 0
  write_update(d, {MessageType::update, k_no_slot, session, token + 1, 12}, {}, 2);
  send(d);                                                           // bad token
  write_update(d, {MessageType::update, k_no_slot, session, token, 100000}, {}, 2);
  send(d);
  write_update(d, {MessageType::update, k_no_slot, session, token, 3}, {}, 2);
  send(d);                                                           // replayed from long ago
  write_update(d, {MessageType::update, k_no_slot, session, token, 100001}, update, 2);
  send(d);                                                           // a spectator sending inputs

  const ProcessResult h = host.finish();
  const ProcessResult p = peer.finish();
  INFO(h.out << h.err);
  CHECK(h.exit_code == 0);
  CHECK(p.exit_code == 0);
  CHECK(std::regex_match(h.last_line(), std::regex("tick 360 hash [0-9a-f]{16}")));
  CHECK(h.last_line() == p.last_line());
  std::string totals;
  for (const std::string& line : h.lines()) {
    if (line.rfind("net (session)", 0) == 0) totals = line;
  }
  for (const char* reason : {"short 1", "oversized 1", "bad magic 1", "bad version 2", "unknown address 1",
                             "wrong session 1", "forged slot 1", "bad token 1", "stale 1", "spectator inputs 1"}) {
    CHECK_THAT(totals, Catch::Contains(reason));
  }
}

TEST_CASE("a full session refuses a joiner clearly, and a vanished host ends its peers with code 3",
          "[net][processes][refuse]") {
  TempDir dir;
  const std::string port = std::to_string(free_udp_port());
  const std::string at = "127.0.0.1:" + port;
  RunningProcess host(k_lockstep, {"host", "--port", port, "--players", "2", "--bot", "--ticks", "100000"});
  pause_ms(200);
  RunningProcess peer(k_lockstep, {"join", at, "--bot", "--timeout-ms", "1000", "--record", dir.file("peer.lsr")});
  pause_ms(800);
  const ProcessResult refused = run_process(k_lockstep, {"join", at, "--bot"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err == "error: refused by the host: the session is full\n");

  host.signal(SIGKILL);
  (void)host.finish();
  const ProcessResult orphan = peer.finish();
  INFO(orphan.out << orphan.err);
  CHECK(orphan.exit_code == 3);
  CHECK_THAT(orphan.err, Catch::StartsWith("error: the host is gone") && Catch::Contains("the recording is saved"));
  const ProcessResult saved = run_process(k_lockstep, {"replay", dir.file("peer.lsr")});
  CHECK(saved.exit_code == 0);

  const ProcessResult nobody = run_process(k_lockstep, {"join", "127.0.0.1:" + std::to_string(free_udp_port()), "--timeout-ms", "300"});
  CHECK(nobody.exit_code == 3);
  CHECK_THAT(nobody.err, Catch::StartsWith("error: no answer from the host"));
  const ProcessResult bad = run_process(k_lockstep, {"join", "nonsense", "--bot"});
  CHECK(bad.exit_code == 2);
}

TEST_CASE("joiners waiting for the others are kept alive, and a silent claimant frees its slot",
          "[net][processes][handshake]") {
  using namespace lockstep::net;
  namespace asio = boost::asio;
  const std::uint16_t port = free_udp_port();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  RunningProcess host(k_lockstep, {"host", "--port", std::to_string(port), "--players", "4", "--bot", "--ticks", "120",
                                   "--timeout-ms", "800"});
  pause_ms(200);
  RunningProcess early(k_lockstep, {"join", at, "--bot", "--timeout-ms", "800"});
  pause_ms(500);
  // A hello from an address that never answers the challenge claims nothing …
  asio::io_context io;
  asio::ip::udp::socket spoofed(io, asio::ip::udp::endpoint(asio::ip::udp::v4(), 0));
  std::vector<std::byte> d;
  write_hello(d, {MessageType::hello, k_no_slot, 0, 0, 1}, {k_protocol_version, Role::player, 0});
  const asio::ip::udp::endpoint to(asio::ip::make_address("127.0.0.1"), port);
  spoofed.send_to(asio::buffer(d.data(), d.size()), to);
  // … while someone who does claims a slot, and then says nothing more.
  asio::ip::udp::socket squatter(io, asio::ip::udp::endpoint(asio::ip::udp::v4(), 0));
  REQUIRE(raw_handshake(squatter, to, Role::player).welcome.has_value());
  pause_ms(2000);  // longer than every timeout: the early joiner must still be there
  RunningProcess late1(k_lockstep, {"join", at, "--bot", "--timeout-ms", "800"});
  RunningProcess late2(k_lockstep, {"join", at, "--bot", "--timeout-ms", "800"});
  const ProcessResult h = host.finish();
  std::vector<ProcessResult> peers = {early.finish(), late1.finish(), late2.finish()};
  INFO(h.out << h.err);
  CHECK(h.exit_code == 0);
  CHECK(std::regex_match(h.last_line(), std::regex("tick 120 hash [0-9a-f]{16}")));
  for (const ProcessResult& p : peers) {
    INFO(p.out << p.err);
    CHECK(p.exit_code == 0);
    CHECK(p.last_line() == h.last_line());
  }
  CHECK_THAT(h.out, Catch::Contains("player 2 went silent before the start; the slot is free"));
  CHECK_THAT(h.out, Catch::Contains("player 2 joined"));
}
