// `lockstep host`, `join` and `spectate`: networked lockstep sessions of the built-in world over
// UDP. Each prints network statistics once a second and at the end, and finishes with exactly
// `tick <N> hash <16 hex>`. Exit codes: 0 finished, 1 desync, 2 bad arguments or refused,
// 3 the network failed.

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "commands.hpp"
#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/session.hpp"
#include "scene_options.hpp"
#include "strict_numbers.hpp"

namespace lockstep::tools {
namespace {

struct NetOptions {
  // host
  std::uint16_t port = 7777;
  std::uint32_t players = 2;
  bool relay = false;
  std::uint64_t ticks = 600;
  std::uint32_t input_delay = 2;
  SceneOptions scene;
  // everyone
  std::string host;
  bool bot = false;
  std::string record;
  std::string netsim;
  std::uint64_t perturb_tick = 0;
  std::string evidence_dir = ".";
  std::uint32_t notify_ms = 1000;
  std::uint32_t timeout_ms = 5000;
};

// SIGINT and SIGTERM make a participant leave cleanly: a peer says goodbye, a host ends the
// session; recordings are finished either way.
std::atomic<bool> g_leave{false};
extern "C" void request_leave(int) { g_leave.store(true); }

net::SessionOptions<World> session_options(const NetOptions& o) {
  net::SessionOptions<World> s;
  g_leave.store(false);
  std::signal(SIGINT, request_leave);
  std::signal(SIGTERM, request_leave);
  s.stop_requested = [] { return g_leave.load(); };
  s.port = o.port;
  s.players = o.players;
  s.relay = o.relay;
  s.end_tick = o.ticks;
  s.input_delay = o.input_delay;
  s.record = o.record;
  s.evidence_dir = o.evidence_dir;
  s.notify_after = std::chrono::milliseconds(o.notify_ms);
  s.timeout_after = std::chrono::milliseconds(o.timeout_ms);
  if (!o.netsim.empty()) {
    Result<net::NetSimConfig> netsim = net::parse_netsim(o.netsim);
    if (!netsim) throw CommandError{netsim.error().message};
    s.netsim = netsim.value();
  }
  if (o.perturb_tick > 0) {
    s.perturb_tick = o.perturb_tick;
    s.perturb = [](World& world) {
      const BodyId body{1};
      const Vec2 v = world.velocity(body);
      world.set_velocity(body, {v.x + 1e-6, v.y});
    };
  }
  if (o.bot) {
    auto bot = std::make_shared<std::optional<Bot>>();
    s.input = [bot](std::uint32_t slot, std::uint64_t seed, std::uint64_t) {
      if (!bot->has_value()) bot->emplace(seed, slot);
      return (*bot)->next();
    };
  }
  s.log = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  return s;
}

int report(const net::SessionResult& r) {
  std::fflush(stdout);
  switch (r.outcome) {
    case net::Outcome::finished:
      std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(r.tick), hash_hex(r.hash).c_str());
      return 0;
    case net::Outcome::desync:
      std::printf("desync at tick %llu\nevidence: %s\n", static_cast<unsigned long long>(r.desync_tick), r.evidence.c_str());
      return 1;
    case net::Outcome::refused:
      std::fprintf(stderr, "error: %s\n", r.message.c_str());
      return 2;
    case net::Outcome::network_failed:
      std::fprintf(stderr, "error: %s\n", r.message.c_str());
      return 3;
  }
  return 3;
}

net::Endpoint resolve(const std::string& host_port) {
  const std::size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size()) {
    throw CommandError{"want HOST:PORT, not '" + host_port + "'"};
  }
  const std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  boost::asio::io_context io;
  boost::asio::ip::udp::resolver resolver(io);
  boost::system::error_code error;
  auto results = resolver.resolve(boost::asio::ip::udp::v4(), host, port, error);
  if (error || results.empty()) throw CommandError{"cannot resolve '" + host_port + "': " + error.message()};
  return *results.begin();
}

void host_command(const NetOptions& o, int* exit_code) {
  const WorldConfig config = world_config_from(o.scene, o.players);
  *exit_code = report(net::run_host<World>(config, o.scene.seed, session_options(o)));
}

void add_common(CLI::App* cmd, NetOptions& o, bool player) {
  if (player) cmd->add_flag("--bot", o.bot, "Play with the seeded bot input generator (unattended)");
  cmd->add_option("--record", o.record, "Record the session as a replay file");
  cmd->add_option("--netsim", o.netsim,
                  "Simulate a bad network on what this process sends: loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,seed=7");
  cmd->add_option("--evidence-dir", o.evidence_dir, "Where to write desync evidence (default: here)");
  cmd->add_option("--timeout-ms", o.timeout_ms, "Silence after which the other side is gone (default 5000)")
      ->check(whole_number(100, 600'000));
  if (player) {
    cmd->add_option("--debug-perturb-tick", o.perturb_tick, "Test only: nudge one value of this state after tick T")
        ->check(whole_number());
  }
}

}  // namespace

void add_net_commands(CLI::App& app, int* exit_code) {
  auto host = std::make_shared<NetOptions>();
  CLI::App* host_cmd = app.add_subcommand("host", "Host a networked lockstep session over UDP");
  host_cmd->add_option("--port", host->port, "UDP port to listen on (default 7777)")->check(whole_number(1, 65535));
  host_cmd->add_option("--players", host->players, "Player slots, the host's included unless --relay (default 2)")
      ->check(whole_number(1, net::k_max_players));
  host_cmd->add_flag("--relay", host->relay, "Relay only: the host plays no slot");
  host_cmd->add_option("--ticks", host->ticks, "The session ends after this tick (default 600)")
      ->check(whole_number(1, std::uint64_t{1} << 32));
  host_cmd->add_option("--input-delay", host->input_delay, "Input delay D in ticks (default 2)")->check(whole_number(0, 60));
  add_scene_options(host_cmd, host->scene);
  host_cmd->add_option("--notify-ms", host->notify_ms, "Silence after which a player is reported interrupted (default 1000)")
      ->check(whole_number(50, 600'000));
  add_common(host_cmd, *host, true);
  host_cmd->callback([host, exit_code] { host_command(*host, exit_code); });

  auto join = std::make_shared<NetOptions>();
  CLI::App* join_cmd = app.add_subcommand("join", "Join a session as a player");
  join_cmd->add_option("host", join->host, "HOST:PORT of the session's host")->required();
  add_common(join_cmd, *join, true);
  join_cmd->callback([join, exit_code] {
    *exit_code = report(net::run_peer<World>(resolve(join->host), net::Role::player, session_options(*join)));
  });

  auto spectate = std::make_shared<NetOptions>();
  CLI::App* spectate_cmd = app.add_subcommand("spectate", "Watch a session: receive the inputs and step with them");
  spectate_cmd->add_option("host", spectate->host, "HOST:PORT of the session's host")->required();
  add_common(spectate_cmd, *spectate, false);
  spectate_cmd->callback([spectate, exit_code] {
    *exit_code = report(net::run_peer<World>(resolve(spectate->host), net::Role::spectator, session_options(*spectate)));
  });
}

}  // namespace lockstep::tools
