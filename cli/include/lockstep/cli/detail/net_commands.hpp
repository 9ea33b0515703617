#pragma once
// `host`, `join` and `spectate`: thin drivers of net::Session<S> over real UDP.
// Each prints network statistics once a second and at the end, and finishes with exactly
// `tick <N> hash <16 hex>`. Exit codes: 0 finished, 1 desync, 2 bad arguments or refused,
// 3 the network failed, 128 + N stopped by signal N.

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/live_view.hpp"
#include "lockstep/cli/detail/run_command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/net/host_port.hpp"
#include "lockstep/net/reconnect_key.hpp"
#include "lockstep/net/session_driver.hpp"

namespace lockstep::cli::detail {

template <class S>
struct NetOptions {
  // host
  std::uint16_t port = 7777;
  std::uint32_t players = 2;
  std::uint32_t start_with = 0;
  std::string on_desync = "stop";
  bool relay = false;
  std::uint64_t ticks = 600;
  std::string input_delay = "auto";
  std::uint32_t tick_rate_hz = 60;
  std::uint32_t notify_ms = 1000;
  std::uint32_t wait_timeout_s = 0;
  std::uint64_t seed = 1;
  typename ConfigOptions<S>::Type config;
  // everyone
  std::string host;
  bool bot = false;
  std::string record;
  std::string netsim;
  std::string stats_json;
  std::uint64_t perturb_tick = 0;
  std::string evidence_dir = ".";
  std::uint32_t timeout_ms = 5000;
  // join
  std::string key_file;
  // everyone: the page (--view[=PORT])
  std::string view;
  CLI::Option* view_option = nullptr;
};

/// `--view`: the session on a web page, which also plays the local player with the keyboard
/// (unless --bot plays it). Frames and status go out after every tick; the page's keys come in
/// every loop and are sampled when the session asks for the local input.
template <class S>
class NetView {
 public:
  /// The page's server when --view was given, else null.
  static std::unique_ptr<NetView> start_if_asked(const NetOptions<S>& o, const net::DriverOptions<S>& driver) {
    if (o.view_option == nullptr || o.view_option->count() == 0) return nullptr;
    std::uint16_t port = 8760;
    if (!o.view.empty()) {
      unsigned parsed = 0;
      const auto [end, error] = std::from_chars(o.view.data(), o.view.data() + o.view.size(), parsed);
      if (error != std::errc{} || end != o.view.data() + o.view.size() || parsed > 65535) {
        throw CommandError{"--view '" + o.view + "' is not a port (0 to 65535): write --view=PORT"};
      }
      port = static_cast<std::uint16_t>(parsed);
    }
    Result<std::unique_ptr<ViewServer>> started = ViewServer::start(ViewServerConfig{"127.0.0.1", port});
    if (!started) throw CommandError{started.error().message, k_exit_network};
    auto view = std::unique_ptr<NetView>(new NetView(std::move(started).value(), o.record));
    driver.log(driver.name + (driver.name == "spectator" || o.bot ? ": watch at " : ": watch and play at ") +
               view->server_->url() + " in a browser");
    return view;
  }

  /// Wires the page to the session's driver: every loop, after the datagrams are sent, what the
  /// pages sent and the latest tick's frame; and (when `keys_play`) the local player's input
  /// from the page's keys.
  void attach(const net::Session<S>& session, net::DriverOptions<S>& driver, bool keys_play) {
    session_ = &session;
    is_host_ = driver.name == "host";
    driver.each_loop = [this] { on_loop(); };
    if (keys_play) {
      driver.input = [this](std::uint32_t, std::uint64_t, std::uint64_t tick) { return live_.input_for(tick); };
    }
  }

  /// Tells the pages how the session ended.
  void finish(const net::DriveResult& driven) {
    const net::SessionResult& r = driven.session;
    std::string phase = "ended";
    std::string message = driven.signal != 0 ? "the session was stopped" : "the session has ended";
    if (driven.signal == 0 && r.outcome == net::Outcome::desync) {
      phase = "desync";
      message = "desync at tick " + std::to_string(r.desync_tick) + "; evidence: " + r.evidence;
    } else if (driven.signal == 0 && r.outcome != net::Outcome::finished) {
      const bool host_gone = !is_host_ && r.message.find("the host") != std::string::npos;
      phase = r.outcome == net::Outcome::refused ? "refused" : host_gone ? "host lost" : "failed";
      message = r.message;
    }
    live_.tell_end(state(), phase, message);
  }

 private:
  NetView(std::unique_ptr<ViewServer> server, std::string record)
      : server_(std::move(server)), live_(*server_), record_(std::move(record)) {}

  [[nodiscard]] LiveState state() const {
    const net::NetStats stats = session_->stats();
    return {session_->tick(), session_->hash(), stats.input_delay, stats.rtt_ms, stats.stall_ticks};
  }

  [[nodiscard]] LiveDescription describe() const {
    const net::SessionParameters& p = session_->parameters();
    return {record_.empty() ? "(not recorded)" : record_, session_->tick(), p.end_tick, p.tick_rate_hz, p.players,
            p.slot == net::k_no_slot ? std::nullopt : std::optional<std::uint32_t>(p.slot)};
  }

  /// What the pages sent; once a peer is welcomed, its description again; and the latest tick's
  /// frame when the session has stepped since the last one (ticks stepped in one loop are shown as
  /// their last), with the state now and then and whenever the keys in use change.
  void on_loop() {
    live_.handle_events(std::chrono::milliseconds(0), [this] { return describe(); });
    if (!welcomed_ && session_->welcomed()) {
      welcomed_ = true;
      live_.describe_again(describe());
    }
    const S* sim = session_->state();
    const std::uint64_t tick = session_->tick();
    if (sim == nullptr || live_.pages_open() == 0 || tick == shown_tick_) return;
    const net::TickLog& ticks = session_->protocol().ticks();
    const std::span<const std::byte> inputs = ticks.known(tick) ? ticks.inputs_of(tick) : std::span<const std::byte>{};
    live_.send_frame(*sim, tick, session_->hash(), inputs, session_->parameters().players, !record_.empty());
    if (tick / 6 != shown_tick_ / 6 || live_.keys_from_tick() != shown_keys_from_) {
      live_.send_status(state(), "running", "");
      shown_keys_from_ = live_.keys_from_tick();
    }
    shown_tick_ = tick;
  }

  std::unique_ptr<ViewServer> server_;
  LiveView<S> live_;
  std::string record_;
  const net::Session<S>* session_ = nullptr;
  bool is_host_ = false;
  bool welcomed_ = false;
  std::uint64_t shown_tick_ = 0;       ///< the last tick whose frame went out
  std::uint64_t shown_keys_from_ = 0;  ///< the keys_from_tick the last status said
};

inline std::uint64_t random_u64() {
  std::random_device device;  // tokens and cookies must not be guessable; not simulation state
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

template <class S>
net::NetSimConfig netsim_of(const NetOptions<S>& o) {
  if (o.netsim.empty()) return {};
  Result<net::NetSimConfig> netsim = net::parse_netsim(o.netsim);
  if (!netsim) throw CommandError{netsim.error().message};
  return netsim.value();
}

template <class S>
net::DriverOptions<S> driver_options(const NetOptions<S>& o, const std::string& name) {
  net::DriverOptions<S> d;
  // SIGINT and SIGTERM make a participant leave cleanly in every phase: a peer says goodbye, a
  // host ends the session; recordings are finished either way.
  catch_stop_signals();
  d.stop_signal = [] { return stop_signal(); };
  d.name = name;
  d.netsim = netsim_of(o);
  if (o.bot) {
    auto bot = std::make_shared<std::optional<decltype(make_bot<S>(0, 0))>>();
    d.input = [bot](std::uint32_t slot, std::uint64_t seed, std::uint64_t) {
      if (!bot->has_value()) bot->emplace(make_bot<S>(seed, slot));
      return (*bot)->next();
    };
  }
  d.log = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  return d;
}

template <class S>
void perturb_if_asked(net::Session<S>& session, const NetOptions<S>& o) {
  if constexpr (HasPerturb<S>) {
    if (o.perturb_tick != 0) session.debug_perturb(o.perturb_tick, [](S& sim) { Hooks<S>::perturb(sim); });
  }
}

template <class S>
int report(const net::DriveResult& driven, const NetOptions<S>& o) {
  const net::SessionResult& r = driven.session;
  std::fflush(stdout);
  int code = 3;
  if (driven.signal != 0) {
    std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(r.tick), hash_hex(r.hash).c_str());
    code = 128 + driven.signal;
  } else {
    switch (r.outcome) {
      case net::Outcome::finished:
        std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(r.tick), hash_hex(r.hash).c_str());
        code = 0;
        break;
      case net::Outcome::desync:
        std::printf("desync at tick %llu\nevidence: %s\n", static_cast<unsigned long long>(r.desync_tick), r.evidence.c_str());
        code = 1;
        break;
      case net::Outcome::refused:
        std::fprintf(stderr, "error: %s\n", r.message.c_str());
        code = 2;
        break;
      case net::Outcome::network_failed:
        std::fprintf(stderr, "error: %s\n", r.message.c_str());
        code = 3;
        break;
    }
  }
  std::fflush(stdout);
  if (!o.stats_json.empty()) {
    std::ofstream json(o.stats_json);
    json << net::stats_json(driven.stats);
    if (!json) {
      std::fprintf(stderr, "error: cannot write the statistics to '%s'\n", o.stats_json.c_str());
      if (code == 0) code = 2;
    }
  }
  return code;
}

template <class S>
void host_command(const NetOptions<S>& o, int* exit_code) {
  const typename S::Config config = config_from<S>(o.config, o.players);
  net::HostConfig host;
  host.relay = o.relay;
  if (o.start_with > o.players) {
    throw CommandError{"--start-with " + std::to_string(o.start_with) + " is more than the " + std::to_string(o.players) + " players"};
  }
  host.start_with = o.start_with;
  host.resync = o.on_desync == "resync";
  host.end_tick = o.ticks;
  // auto: the first delay is 2 (ticks 1 and 2 neutral); the host then adapts it to the players.
  host.adaptive_delay = o.input_delay == "auto";
  host.input_delay = host.adaptive_delay ? 2 : static_cast<std::uint32_t>(std::stoul(o.input_delay));
  host.tick_rate_hz = o.tick_rate_hz;
  host.notify_after = std::chrono::milliseconds(o.notify_ms);
  host.timeout_after = std::chrono::milliseconds(o.timeout_ms);
  host.wait_timeout = std::chrono::seconds(o.wait_timeout_s);
  host.record = o.record;
  host.evidence_dir = o.evidence_dir;
  host.secret = random_u64() | 1;
  host.random = random_u64;
  const net::DriverOptions<S> driver = driver_options(o, "host");
  boost::asio::io_context io;
  Result<std::unique_ptr<net::UdpSocket>> socket = net::UdpSocket::bind(io, o.port, driver.netsim);
  if (!socket) throw CommandError{socket.error().message, 3};
  const net::RealClock clock;
  Result<net::Session<S>> session = net::Session<S>::host(config, o.seed, host, clock.now());
  if (!session) throw CommandError{session.error().message};
  perturb_if_asked(session.value(), o);
  net::DriverOptions<S> driven = driver;
  std::unique_ptr<NetView<S>> view;
  if constexpr (HasKeys<S>) {
    view = NetView<S>::start_if_asked(o, driven);
    if (view) view->attach(session.value(), driven, !o.bot && !o.relay);
  }
  const net::SessionParameters& p = session->parameters();
  driver.log("host: session " + hash_hex(p.session) + " on UDP port " + std::to_string(socket.value()->local_endpoint().port()) +
             ", " + std::to_string(p.players) + " players" + (o.relay ? " (relay: the host plays no slot)" : "") + ", " +
             std::to_string(p.end_tick) + " ticks at " + std::to_string(p.tick_rate_hz) + " Hz, input delay " +
             (host.adaptive_delay ? "auto (adapts to the round trips; " + std::to_string(p.input_delay) + " to start)"
                                  : std::to_string(p.input_delay)) +
             (o.start_with != 0 && o.start_with < p.players ? ", starts with " + std::to_string(o.start_with) : std::string()) +
             (host.resync ? ", resyncs on a desync" : "") + ", netsim " + net::describe(driver.netsim));
  const net::DriveResult result = net::drive(session.value(), *socket.value(), io, clock, driven);
  if (view) view->finish(result);
  *exit_code = report(result, o);
}

template <class S>
void join_command(const NetOptions<S>& o, net::Role role, int* exit_code) {
  Result<net::Endpoint> at = net::parse_host_port(o.host);
  if (!at) throw CommandError{at.error().message};
  net::JoinConfig join;
  join.host = at.value();
  join.role = role;
  join.timeout_after = std::chrono::milliseconds(o.timeout_ms);
  join.record = o.record;
  join.evidence_dir = o.evidence_dir;
  join.nonce = random_u64() | 1;
  std::error_code missing;
  if (!o.key_file.empty() && std::filesystem::exists(o.key_file, missing)) {
    Result<net::Reclaim> key = net::read_reconnect_key(o.key_file);
    if (!key) throw CommandError{key.error().message};
    join.reclaim = key.value();
  }
  net::DriverOptions<S> driver = driver_options(o, role == net::Role::player ? "peer" : "spectator");
  driver.key_file = o.key_file;
  boost::asio::io_context io;
  Result<std::unique_ptr<net::UdpSocket>> socket = net::UdpSocket::open_for(io, join.host, driver.netsim);
  if (!socket) throw CommandError{socket.error().message, 3};
  const net::RealClock clock;
  Result<net::Session<S>> session = net::Session<S>::join(join, clock.now());
  if (!session) throw CommandError{session.error().message};
  perturb_if_asked(session.value(), o);
  driver.log(driver.name + ": asking the host at " + o.host + " to join" +
             (role == net::Role::player ? (join.reclaim ? " as player " + std::to_string(join.reclaim->slot) + " again, with its key"
                                                        : std::string(" as a player"))
                                        : " as a spectator"));
  std::unique_ptr<NetView<S>> view;
  if constexpr (HasKeys<S>) {
    view = NetView<S>::start_if_asked(o, driver);
    if (view) view->attach(session.value(), driver, role == net::Role::player && !o.bot);
  }
  const net::DriveResult result = net::drive(session.value(), *socket.value(), io, clock, driver);
  if (view) view->finish(result);
  *exit_code = report(result, o);
}

template <class S>
void add_common(CLI::App* cmd, NetOptions<S>& o, bool player) {
  if (player) cmd->add_flag("--bot", o.bot, "Play with the seeded bot input generator (unattended)");
  cmd->add_option("--record", o.record, "Record the session as a replay file");
  cmd->add_option("--netsim", o.netsim,
                  "Simulate a bad network on what this process sends: "
                  "loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,outage_at=3000,outage=1500,seed=7");
  cmd->add_option("--evidence-dir", o.evidence_dir, "Where to write desync evidence (default: here)");
  cmd->add_option("--timeout-ms", o.timeout_ms, "Silence after which the other side is gone (default 5000)")
      ->check(whole_number(100, 600'000));
  cmd->add_option("--stats-json", o.stats_json, "On exit, write the network statistics to FILE as one JSON object");
  if constexpr (HasKeys<S>) {
    o.view_option = cmd->add_option("--view", o.view,
                                    player ? "Watch the session on a web page (--view or --view=PORT; default port "
                                             "8760, 0: any) and, without --bot, play it with the keyboard there"
                                           : "Watch the session on a web page (--view or --view=PORT; default port "
                                             "8760, 0: any)")
                        ->expected(0, 1);
  }
  if (player && HasPerturb<S>) {
    cmd->add_option("--debug-perturb-tick", o.perturb_tick, "Test only: nudge one value of this state after tick T")
        ->check(whole_number());
  }
}

/// Registers `host` for S on `cmd`.
template <class S>
void add_host_command(CLI::App* host_cmd, int* exit_code) {
  auto host = std::make_shared<NetOptions<S>>();
  host_cmd->add_option("--port", host->port, "UDP port to listen on, IPv6 and IPv4 (default 7777)")
      ->check(whole_number(1, 65535));
  if constexpr (HasConfigOptions<S>) {
    host_cmd->add_option("--players", host->players, "Player slots, the host's included unless --relay (default 2)")
        ->check(whole_number(1, net::k_max_session_players));
  }
  host_cmd->add_option("--start-with", host->start_with,
                       "Start once M slots are filled (the host's included); players can fill the others while the "
                       "session runs (default: all)")
      ->check(whole_number(1, net::k_max_session_players));
  host_cmd->add_option("--on-desync", host->on_desync,
                       "On a desync: stop everyone, or resync the diverged players from the host's state and go on "
                       "(default stop)")
      ->check(CLI::IsMember({"stop", "resync"}));
  host_cmd->add_flag("--relay", host->relay, "Relay only: the host plays no slot");
  host_cmd->add_option("--ticks", host->ticks, "The session ends after this tick (default 600)")
      ->check(whole_number(1, std::uint64_t{1} << 32));
  host_cmd->add_option("--input-delay", host->input_delay,
                       "Input delay: D ticks (0 to 60), or auto, the smallest that keeps every player from stalling, "
                       "adapted to the measured round trips (default auto)")
      ->check(CLI::IsMember({"auto"}) | whole_number(0, 60));
  host_cmd->add_option("--tick-rate", host->tick_rate_hz, "Ticks per second; every participant paces by it (default 60)")
      ->check(whole_number(1, 1000));
  if constexpr (HasConfigOptions<S>) Hooks<S>::add_options(*host_cmd, host->config);
  host_cmd->add_option("--seed", host->seed, "Session seed (the initial state and the bots; default 1)")
      ->check(whole_number());
  host_cmd->add_option("--notify-ms", host->notify_ms, "Silence after which a player is reported interrupted (default 1000)")
      ->check(whole_number(50, 600'000));
  host_cmd->add_option("--wait-timeout", host->wait_timeout_s,
                       "Give up (exit 3) when the slots are not filled within SECONDS (default: wait forever)")
      ->check(whole_number(1, 86'400));
  add_common(host_cmd, *host, true);
  host_cmd->callback([host, exit_code] { host_command<S>(*host, exit_code); });
}

/// Registers `join` (a player) or `spectate` for S on `cmd`.
template <class S>
void add_join_command(CLI::App* cmd, net::Role role, int* exit_code) {
  auto join = std::make_shared<NetOptions<S>>();
  cmd->add_option("host", join->host, "HOST:PORT of the session's host ([ADDRESS]:PORT for IPv6)")->required();
  if (role == net::Role::player) {
    cmd->add_option("--key", join->key_file,
                    "Reconnect key: written after the welcome; if FILE exists, reclaim the slot it names (after a "
                    "crash or a dropped network) and go on from the host's state");
  }
  add_common(cmd, *join, role == net::Role::player);
  cmd->callback([join, role, exit_code] { join_command<S>(*join, role, exit_code); });
}

}  // namespace lockstep::cli::detail
