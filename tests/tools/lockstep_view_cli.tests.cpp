// `lockstep view` as a real process on loopback, driven by real HTTP requests and WebSockets
// (no browser: tests/browser drives the page itself): what it serves, the frames it answers with,
// two replays that part, and pages that misbehave on purpose.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/cli/view/view_server.hpp"
#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/recorder.hpp"
#include "desync_bundles.hpp"
#include "lockstep_binary.hpp"
#include "process.hpp"
#include "view_client.hpp"

using namespace lockstep;
using lockstep::testing::ProcessResult;
using lockstep::testing::run_process;
using lockstep::testing::RunningProcess;
using lockstep::testing::TempDir;
using lockstep::testing::ViewPage;
using lockstep::testing::k_lockstep;
using lockstep::cli::ShapeKind;
using ViewServerLimits = lockstep::cli::ViewServer;
namespace http = boost::beast::http;
namespace view = lockstep::cli::view;

namespace {

/// A `lockstep view` process on a free port, ready to serve.
struct ViewProcess {
  explicit ViewProcess(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"view"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--port", "0"});
    process = std::make_unique<RunningProcess>(k_lockstep, all);
    REQUIRE(process->wait_for("in a browser", 120'000));
    port = testing::view_port(process->output());
    REQUIRE(port != 0);
  }
  ProcessResult stop() {
    process->signal(SIGINT);
    return process->finish();
  }
  std::unique_ptr<RunningProcess> process;
  std::uint16_t port = 0;
};

std::string run_hash(const std::vector<std::string>& scene, int ticks) {
  std::vector<std::string> args = {"run", "--ticks", std::to_string(ticks)};
  args.insert(args.end(), scene.begin(), scene.end());
  const ProcessResult run = run_process(k_lockstep, args);
  REQUIRE(run.exit_code == 0);
  const std::string line = run.last_line();
  return line.substr(line.rfind(' ') + 1);
}

std::string hex(std::uint64_t hash) { return hash_hex(hash); }

const std::vector<std::string> k_scene = {"--seed", "4", "--bodies", "200"};

}  // namespace

TEST_CASE("view serves its page and answers frame requests with the hashes run computes", "[tools][view]") {
  TempDir dir;
  std::vector<std::string> record = {"run", "--ticks", "600", "--record", dir.file("a.lsr")};
  record.insert(record.end(), k_scene.begin(), k_scene.end());
  REQUIRE(run_process(k_lockstep, record).exit_code == 0);
  ViewProcess server({dir.file("a.lsr")});

  const testing::HttpAnswer page = testing::http_request(server.port, http::verb::get, "/?tick=300&paused=1");
  CHECK(page.status == 200);
  CHECK(page.content_type == "text/html; charset=utf-8");
  CHECK_THAT(page.body, Catch::Contains("<canvas id=\"world\""));
  const testing::HttpAnswer script = testing::http_request(server.port, http::verb::get, "/viewer.js");
  CHECK(script.status == 200);
  CHECK(script.content_type == "text/javascript; charset=utf-8");
  CHECK(testing::http_request(server.port, http::verb::get, "/../../etc/passwd").status == 404);
  CHECK(testing::http_request(server.port, http::verb::post, "/").status == 405);

  ViewPage ws(server.port);
  const std::string hello = ws.read_text();
  CHECK_THAT(hello, Catch::StartsWith("{\"type\":\"hello\",\"mode\":\"replay\""));
  CHECK_THAT(hello, Catch::Contains("\"start_tick\":0,\"last_tick\":600,\"tick_rate_hz\":60,\"players\":4"));
  CHECK_THAT(hello, Catch::Contains("\"keyframes\":[600]"));
  CHECK_THAT(hello, Catch::Contains("\"hash_ranges\":[[1,600]]"));
  CHECK_THAT(hello, Catch::Contains("\"divergence\":null"));

  REQUIRE(ws.request_frames(300, 5));
  std::optional<view::FrameBatch> batch = ws.read_frames();
  REQUIRE(batch);
  REQUIRE(batch->frames.size() == 5);
  CHECK(batch->players == 4);
  CHECK(batch->input_bytes == 2);
  for (std::size_t i = 0; i < 5; ++i) CHECK(batch->frames[i].tick == 300 + i);
  const view::DecodedWorld& at_300 = batch->frames[0].worlds.at(0);
  CHECK(hex(at_300.hash) == run_hash(k_scene, 300));
  CHECK(at_300.flags == static_cast<std::uint8_t>(view::WorldFlags::hash_recorded));
  // The arena of 200 bodies has 4 players' bodies, 4 ropes of 20 links, walls: one shape each.
  std::size_t bodies = 0, players = 0, ropes = 0, walls = 0;
  for (const view::DecodedShape& s : at_300.shapes) {
    bodies += s.kind == ShapeKind::body || s.kind == ShapeKind::fixed_body || s.kind == ShapeKind::player;
    players += s.kind == ShapeKind::player;
    ropes += s.kind == ShapeKind::rope;
    walls += s.kind == ShapeKind::wall;
  }
  const ProcessResult info = run_process(k_lockstep, {"run", "--ticks", "1", "--seed", "4", "--bodies", "200"});
  CHECK_THAT(info.out, Catch::Contains(std::to_string(bodies) + " bodies, "));
  CHECK_THAT(info.out, Catch::Contains(std::to_string(ropes) + " rope links"));
  CHECK(players == 4);
  CHECK(walls == 1);

  SECTION("the end of the replay shortens a batch, and a tick past it is an error the page survives") {
    REQUIRE(ws.request_frames(598, 10));
    batch = ws.read_frames();
    REQUIRE(batch);
    REQUIRE(batch->frames.size() == 3);
    CHECK(batch->frames.back().tick == 600);
    CHECK(hex(batch->frames.back().worlds[0].hash) == run_hash(k_scene, 600));
    REQUIRE(ws.request_frames(601, 1));
    CHECK(ws.read_text() == "{\"type\":\"error\",\"message\":\"tick 601 is outside the view (0 to 600)\"}");
    REQUIRE(ws.request_frames(0, 1));
    batch = ws.read_frames();
    REQUIRE(batch);
    CHECK(batch->frames[0].tick == 0);
    CHECK(hex(batch->frames[0].worlds[0].hash) == run_hash(k_scene, 0));
  }
  SECTION("a seek backwards answers with the state of that tick") {
    REQUIRE(ws.request_frames(17, 1));
    batch = ws.read_frames();
    REQUIRE(batch);
    CHECK(hex(batch->frames[0].worlds[0].hash) == run_hash(k_scene, 17));
  }
  const ProcessResult stopped = server.stop();
  CHECK(stopped.exit_code == 0);
  CHECK_THAT(stopped.last_line(), Catch::StartsWith("view: stopped; 1 page opened, 0 closed for bad messages"));
}

TEST_CASE("view of two replays that part at tick 200 names the tick and marks the pushed body from it",
          "[tools][view][divergence]") {
  TempDir dir;
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 100;
  for (const char* name : {"a.lsr", "b.lsr"}) {
    Result<Runner<World>> runner = Runner<World>::create(config, 9);
    REQUIRE(runner.ok());
    Result<replay::Recorder<World>> recorder = replay::Recorder<World>::create(dir.file(name), config, 9, runner.value(), replay::RecordOptions{});
    REQUIRE(recorder.ok());
    std::vector<Bot> bots = {Bot(9, 0), Bot(9, 1), Bot(9, 2), Bot(9, 3)};
    std::vector<ButtonInput> inputs(4);
    for (int t = 1; t <= 300; ++t) {
      for (std::size_t p = 0; p < 4; ++p) inputs[p] = bots[p].next();
      // b.lsr: player 2 holds the action button at tick 200 whatever its bot chose.
      if (t == 200 && std::string(name) == "b.lsr") inputs[2].buttons = inputs[2].action() ? 0 : ButtonInput::k_action;
      REQUIRE(runner->step(inputs).ok());
      REQUIRE(recorder->record(runner.value(), inputs).ok());
    }
    REQUIRE(recorder->finish().ok());
  }
  ViewProcess server({dir.file("a.lsr"), dir.file("b.lsr")});
  ViewPage ws(server.port);
  const std::string hello = ws.read_text();
  CHECK_THAT(hello, Catch::Contains("\"mode\":\"compare\""));
  CHECK_THAT(hello, Catch::Contains("\"worlds\":2"));
  CHECK_THAT(hello, Catch::Contains("\"divergence\":{\"tick\":200,"));
  CHECK_THAT(hello, Catch::Contains("{\"part\":\"body "));

  REQUIRE(ws.request_frames(199, 2));
  std::optional<view::FrameBatch> batch = ws.read_frames();
  REQUIRE(batch);
  REQUIRE(batch->frames.size() == 2);
  const view::DecodedFrame& before = batch->frames[0];
  const view::DecodedFrame& at = batch->frames[1];
  CHECK(before.worlds[0].hash == before.worlds[1].hash);
  CHECK(at.worlds[0].hash != at.worlds[1].hash);
  auto marked = [](const view::DecodedWorld& w) {
    std::vector<const view::DecodedShape*> out;
    for (const view::DecodedShape& s : w.shapes) {
      if ((s.flags & static_cast<std::uint8_t>(view::ShapeFlags::differs)) != 0) out.push_back(&s);
    }
    return out;
  };
  CHECK(marked(before.worlds[0]).empty());
  const std::vector<const view::DecodedShape*> differs = marked(at.worlds[0]);
  REQUIRE_FALSE(differs.empty());
  bool pushed = false;
  for (const view::DecodedShape* s : differs) pushed = pushed || (s->kind == ShapeKind::player && s->player == 2);
  CHECK(pushed);
  CHECK(at.worlds[1].inputs != at.worlds[0].inputs);
  CHECK(server.stop().exit_code == 0);
}

TEST_CASE("view of a bundle shows the host beside the first participant that diverged, each at its own state",
          "[tools][view][bundle]") {
  TempDir dir;
  REQUIRE(replay::write_bundle_file(dir.file("d.lsbundle"), testing::make_bundle(4, {2}, {1})).ok());
  ViewProcess server({dir.file("d.lsbundle")});
  ViewPage ws(server.port);
  const std::string hello = ws.read_text();
  CHECK_THAT(hello, Catch::Contains("\"mode\":\"evidence\""));
  CHECK_THAT(hello, Catch::Contains("\"files\":[\"#0 (the host, slot 0)\",\"#2 (slot 2)\"]"));
  CHECK_THAT(hello, Catch::Contains("\"divergence\":{\"tick\":150,"));
  REQUIRE(ws.request_frames(149, 2));
  std::optional<view::FrameBatch> batch = ws.read_frames();
  REQUIRE(batch);
  REQUIRE(batch->frames.size() == 2);
  CHECK(batch->frames[0].worlds[0].hash == batch->frames[0].worlds[1].hash);
  CHECK(batch->frames[1].worlds[0].hash != batch->frames[1].worlds[1].hash);
  CHECK(server.stop().exit_code == 0);
  const ProcessResult missing = run_process(k_lockstep, {"view", dir.file("d.lsbundle"), "--participant", "1"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "error: #1 (slot 1) sent no evidence: it sent nothing within 2,000 ms\n");
}

TEST_CASE("view of a bundle with two diverged groups overlays both on the host's, and --participant picks one",
          "[tools][view][bundle]") {
  // Participants 1 and 3 diverge, each its own way: three groups, {0, 2}, {1} and {3}.
  TempDir dir;
  REQUIRE(replay::write_bundle_file(dir.file("d.lsbundle"), testing::make_bundle(4, {1, 3}, {}, false, true)).ok());
  {
    ViewProcess server({dir.file("d.lsbundle")});
    ViewPage ws(server.port);
    const std::string hello = ws.read_text();
    CHECK_THAT(hello, Catch::Contains("\"files\":[\"#0 (the host, slot 0)\",\"#1 (slot 1)\",\"#3 (slot 3)\"]"));
    CHECK_THAT(hello, Catch::Contains("\"worlds\":3"));
    REQUIRE(ws.request_frames(149, 2));
    std::optional<view::FrameBatch> batch = ws.read_frames();
    REQUIRE(batch);
    REQUIRE(batch->frames.size() == 2);
    const auto& before = batch->frames[0].worlds;
    const auto& at = batch->frames[1].worlds;
    REQUIRE(at.size() == 3);
    CHECK((before[0].hash == before[1].hash && before[1].hash == before[2].hash));
    // At the desync tick: three states, and each other world's body 1 marked as differing.
    CHECK(at[0].hash != at[1].hash);
    CHECK(at[0].hash != at[2].hash);
    CHECK(at[1].hash != at[2].hash);
    for (const auto& world : at) {
      CHECK(std::ranges::count_if(world.shapes, [](const auto& shape) { return (shape.flags & 1) != 0; }) >= 1);
    }
    CHECK(server.stop().exit_code == 0);
  }
  ViewProcess chosen({dir.file("d.lsbundle"), "--participant", "3"});
  ViewPage ws(chosen.port);
  CHECK_THAT(ws.read_text(), Catch::Contains("\"files\":[\"#0 (the host, slot 0)\",\"#3 (slot 3)\"]"));
  CHECK(chosen.stop().exit_code == 0);
}

TEST_CASE("view refuses what it cannot show with one error line", "[tools][view][errors]") {
  TempDir dir;
  REQUIRE(run_process(k_lockstep, {"run", "--ticks", "10", "--bodies", "10", "--record", dir.file("a.lsr")}).exit_code == 0);
  std::ofstream(dir.file("junk.lsr")) << "not a replay";
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"view", dir.file("missing.lsr")}, "error: cannot open"},
      {{"view", dir.file("junk.lsr")}, "error: "},
      {{"view", dir.file("a.lsr"), dir.path()}, "error: '" + dir.path() + "' is not a regular file (a directory)"},
      {{"view", dir.path()}, "error: '" + dir.path() + "' is not a regular file (a directory)"},
      {{"view", dir.file("a.lsr"), "--listen", "localhost:80"}, "error: --listen 'localhost:80' is not an IPv4 or IPv6 address"},
      {{"view", dir.file("a.lsr"), "--port", "65536"}, "error: "},
  };
  for (const Case& c : cases) {
    const ProcessResult r = run_process(k_lockstep, c.args);
    INFO(c.args.back() << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith(c.error));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // A port another server holds: the network's exit code.
  ViewProcess first({dir.file("a.lsr")});
  const ProcessResult taken = run_process(k_lockstep, {"view", dir.file("a.lsr"), "--port", std::to_string(first.port)});
  CHECK(taken.exit_code == 3);
  CHECK_THAT(taken.err, Catch::StartsWith("error: cannot listen on 127.0.0.1 port " + std::to_string(first.port)));
  CHECK(first.stop().exit_code == 0);
}

TEST_CASE("no request, message or crowd of connections crashes the view server or grows it without bound",
          "[tools][view][hostile]") {
  TempDir dir;
  std::vector<std::string> record = {"run", "--ticks", "600", "--record", dir.file("a.lsr")};
  record.insert(record.end(), k_scene.begin(), k_scene.end());
  REQUIRE(run_process(k_lockstep, record).exit_code == 0);
  ViewProcess server({dir.file("a.lsr")});
  auto bytes = [](const std::string& s) {
    return std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()), reinterpret_cast<const std::byte*>(s.data()) + s.size());
  };
  auto closed_after = [&](const std::vector<std::byte>& message, bool binary) {
    ViewPage ws(server.port);
    ws.read_text();  // hello
    ws.send(message, binary);
    return !ws.read().has_value();
  };
  CHECK(closed_after(bytes("{\"frames\": 1}"), false));                   // a text message
  CHECK(closed_after(std::vector<std::byte>(1 << 20, std::byte{1}), true));  // a megabyte
  CHECK(closed_after(view::encode_request(view::FramesRequest{0, 0}), true));
  CHECK(closed_after(std::vector<std::byte>{std::byte{9}}, true));          // an unknown kind

  // HTTP that is not HTTP, headers past the limit, a body: answered with nothing or an error.
  CHECK(testing::raw_exchange(server.port, "GARBAGE\r\n\r\n").find("200 OK") == std::string::npos);
  CHECK(testing::raw_exchange(server.port, "GET / HTTP/1.1\r\nX: " + std::string(64 << 10, 'a') + "\r\n\r\n").find("200 OK") ==
        std::string::npos);
  CHECK(testing::raw_exchange(server.port, "POST / HTTP/1.1\r\nContent-Length: 100000000\r\n\r\nxx").find("200 OK") ==
        std::string::npos);

  // Another web site open in the same browser, by its own name or by one that resolves here (DNS
  // rebinding), gets nothing: not the page, not a WebSocket.
  const std::string at = "127.0.0.1:" + std::to_string(server.port);
  const std::string upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
  CHECK_THAT(testing::raw_exchange(server.port, "GET / HTTP/1.1\r\nHost: " + at + "\r\nOrigin: http://" + at +
                                                    "\r\nConnection: close\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 200 OK"));
  CHECK_THAT(testing::raw_exchange(server.port, "GET / HTTP/1.1\r\nHost: evil.example:" + std::to_string(server.port) +
                                                    "\r\nConnection: close\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 403 Forbidden"));
  CHECK_THAT(testing::raw_exchange(server.port, "GET /ws HTTP/1.1\r\nHost: " + at + "\r\n" + upgrade +
                                                    "Origin: http://evil.example\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 403 Forbidden"));
  CHECK_THAT(testing::raw_exchange(server.port, "GET /ws HTTP/1.1\r\nHost: " + at + "\r\n" + upgrade +
                                                    "Origin: http://" + at + "\r\n\r\n", 2),
             Catch::StartsWith("HTTP/1.1 101 Switching Protocols"));

  // More connections than the server takes: the extra ones are closed at once.
  {
    boost::asio::io_context io;
    std::vector<boost::asio::ip::tcp::socket> crowd;
    for (int i = 0; i < 12; ++i) crowd.push_back(testing::connect_to(io, server.port));
    std::vector<pollfd> fds;
    for (auto& socket : crowd) fds.push_back(pollfd{socket.native_handle(), POLLRDHUP, 0});
    // A closed socket leaves poll() at once: it is counted and left out of the next rounds (a
    // negative fd), so that every round waits for the server (slow under -O0 on a loaded machine).
    std::size_t refused = 0;
    for (int round = 0; round < 100 && refused < crowd.size() - ViewServerLimits::k_max_connections; ++round) {
      ::poll(fds.data(), fds.size(), 100);
      for (pollfd& fd : fds) {
        if (fd.fd >= 0 && (fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
          ++refused;
          fd.fd = -1;
        }
      }
    }
    CHECK(refused >= crowd.size() - ViewServerLimits::k_max_connections);
  }

  // A page that asks for a full batch two thousand times and never reads: closed once its unsent
  // frames pass the bound, so the server never holds them all (about 1 MB each: 2 GB).
  {
    // The crowd's accepted connections count until the server has seen them close: a page refused
    // meanwhile (reset at once) tries again, for at most ten seconds.
    std::optional<ViewPage> page;
    for (int attempt = 0; !page; ++attempt) {
      try {
        page.emplace(server.port, 60, 4096);
      } catch (const std::exception&) {
        if (attempt == 100) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    ViewPage& greedy = *page;
    for (int i = 0; i < 2000; ++i) {
      if (!greedy.request_frames(static_cast<std::uint64_t>(i % 300), view::k_max_frames_per_request)) break;
    }
    CHECK(greedy.wait_closed_by_server(300'000));
  }
  // Whatever happened, a well-behaved page is served as before.
  ViewPage good(server.port);
  CHECK_THAT(good.read_text(), Catch::StartsWith("{\"type\":\"hello\""));
  REQUIRE(good.request_frames(300, 1));
  std::optional<view::FrameBatch> batch = good.read_frames();
  REQUIRE(batch);
  CHECK(hex(batch->frames[0].worlds[0].hash) == run_hash(k_scene, 300));
  const ProcessResult stopped = server.stop();
  CHECK(stopped.exit_code == 0);
  // Four pages closed for what they sent, the greedy one for not reading, some of the crowd refused.
  INFO(stopped.out);
  CHECK(std::regex_search(stopped.last_line(), std::regex("^view: stopped; 7 pages opened, 4 closed for bad messages, "
                                                          "1 closed for not reading, [0-9]+ connections refused, "
                                                          "2 requests from other sites refused$")));
  INFO("peak resident memory " << stopped.peak_rss_kb << " KiB");
  CHECK(stopped.peak_rss_kb < 400 * 1024);
}

TEST_CASE("play takes a page's keys as player 0's input from the tick it says, records them and ends cleanly",
          "[tools][view][play]") {
  TempDir dir;
  RunningProcess play(k_lockstep, {"play", "--ticks", "120", "--bodies", "50", "--record", dir.file("p.lsr"), "--port", "0"});
  REQUIRE(play.wait_for("in a browser", 60'000));
  const std::uint16_t port = testing::view_port(play.output());
  REQUIRE(port != 0);
  ViewPage page(port);
  CHECK_THAT(page.read_text(), Catch::Contains("\"mode\":\"live\""));
  // The status that first reports `keys` says from which tick they apply.
  auto applied_from = [&page](unsigned keys) -> long {
    const std::regex status("\"keys\":" + std::to_string(keys) + ",\"keys_from_tick\":([0-9]+)");
    for (int i = 0; i < 2000; ++i) {
      bool text = false;
      const std::optional<std::string> message = page.read(&text);
      if (!message) return -1;
      std::smatch match;
      if (text && std::regex_search(*message, match, status)) return std::stol(match[1].str());
    }
    return -1;
  };
  REQUIRE(page.send(view::encode_request(view::KeysRequest{static_cast<std::uint8_t>(view::KeyBits::left)})));
  const long left_from = applied_from(2);
  REQUIRE(page.send(view::encode_request(view::KeysRequest{0})));
  const long left_until = applied_from(0);
  REQUIRE(left_from > 0);
  REQUIRE(left_until > left_from);
  bool ended = false;
  for (int i = 0; i < 2000 && !ended; ++i) {
    bool text = false;
    const std::optional<std::string> message = page.read(&text);
    if (!message) break;
    ended = text && message->find("\"state\":\"ended\"") != std::string::npos;
  }
  CHECK(ended);
  const ProcessResult done = play.finish();
  CHECK(done.exit_code == 0);
  const ProcessResult replayed = run_process(k_lockstep, {"replay", dir.file("p.lsr")});
  CHECK(replayed.exit_code == 0);
  CHECK(replayed.last_line().substr(replayed.last_line().rfind(' ')) == done.last_line().substr(done.last_line().rfind(' ')));
  const ProcessResult rows = run_process(k_lockstep, {"export", dir.file("p.lsr"), "--inputs", "--fields", "params.substeps"});
  const std::regex row("\\{\"tick\":([0-9]+),\"hash\":\"[0-9a-f]+\",\"inputs\":\\[\"([0-9a-f]{4})\"");
  std::size_t checked = 0;
  for (const std::string& line : rows.lines()) {
    std::smatch match;
    if (!std::regex_search(line, match, row)) continue;
    const long tick = std::stol(match[1].str());
    INFO("tick " << tick);
    CHECK(match[2].str() == (tick >= left_from && tick < left_until ? "0200" : "0000"));
    ++checked;
  }
  CHECK(checked == 120);
}

TEST_CASE("play closes a page that sends keys no keyboard has, and plays on", "[tools][view][play][hostile]") {
  RunningProcess play(k_lockstep, {"play", "--ticks", "600", "--bodies", "10", "--port", "0"});
  REQUIRE(play.wait_for("in a browser", 60'000));
  const std::uint16_t port = testing::view_port(play.output());
  {
    ViewPage bad(port);
    bad.read_text();
    bad.send(std::vector<std::byte>{std::byte{2}, std::byte{0x80}});
    bool closed = false;
    for (int i = 0; i < 1000 && !closed; ++i) closed = !bad.read().has_value();
    CHECK(closed);
  }
  ViewPage good(port);
  CHECK_THAT(good.read_text(), Catch::Contains("\"mode\":\"live\""));
  const ProcessResult done = play.finish();
  CHECK(done.exit_code == 0);
  CHECK(std::regex_match(done.last_line(), std::regex("tick 600 hash [0-9a-f]{16}")));
}
