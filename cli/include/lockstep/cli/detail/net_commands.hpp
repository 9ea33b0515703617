#pragma once
// `host`, `join` and `spectate`: thin drivers of net::Session<S> over real UDP (and `spectate URL`
// follows a broadcast over HTTP: broadcast_spectate.hpp).
// Each prints network statistics once a second and at the end, and finishes with exactly
// `tick <N> hash <16 hex>`. Exit codes: 0 finished, 1 desync, 2 bad arguments or refused,
// 3 the network failed, 128 + N stopped by signal N. What needs no simulation type is in
// net_flags.hpp (src/net_commands.cpp).

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/broadcast_spectate.hpp"
#include "lockstep/cli/detail/local_invites.hpp"
#include "lockstep/cli/detail/net_flags.hpp"
#include "lockstep/cli/detail/run_command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/cli/view/live_view.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/session/session_driver.hpp"

namespace lockstep::cli::detail {

/// `host`'s options: its own, and the simulation's configuration options.
template <class S>
struct HostOptions {
  HostFlags flags;
  typename ConfigOptions<S>::Type config;
};

/// `--view`: the session on a web page, which also plays the local player with the keyboard
/// (unless --bot plays it). Frames and status go out after every tick; the page's keys come in
/// every loop and are sampled when the session asks for the local input.
template <class S>
class NetView {
 public:
  /// The page's server when --view was given, else null.
  static std::unique_ptr<NetView> start_if_asked(const SessionFlags& o, const net::DriverOptions<S>& driver) {
    std::unique_ptr<ViewServer> server = start_view_if_asked(o);
    if (!server) return nullptr;
    auto view = std::unique_ptr<NetView>(new NetView(std::move(server), o.record));
    driver.log(view_announcement(driver.name, o.bot, view->server_->url()));
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
    const LiveEnd end = live_end(driven, is_host_);
    live_.tell_end(state(), end.phase, end.message);
  }

 private:
  NetView(std::unique_ptr<ViewServer> server, std::string record)
      : server_(std::move(server)), live_(*server_), record_(std::move(record)) {}

  [[nodiscard]] LiveState state() const {
    const net::NetStats stats = session_->stats();
    return {session_->tick(),
            session_->hash(),
            stats.input_delay,
            stats.rtt_ms,
            stats.stall_ticks,
            stats.input_latency_p50_ticks,
            stats.input_latency_p99_ticks,
            stats.prediction_window,
            session_->present_tick() - session_->tick()};
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
    // With prediction the page draws the predicted state of the present tick (its hash is this
    // participant's own, recorded nowhere), and the confirmed one when they are the same tick.
    const S* sim = session_->state();
    const std::uint64_t tick = session_->present_tick();
    if (sim == nullptr || live_.pages_open() == 0 || tick == shown_tick_) return;
    const bool confirmed = tick == session_->tick();
    const net::TickLog& ticks = session_->protocol().ticks();
    const std::span<const std::byte> inputs = ticks.known(tick) ? ticks.inputs_of(tick) : std::span<const std::byte>{};
    live_.send_frame(*sim, tick, confirmed ? session_->hash() : canonical_hash(hasher_, tick, *sim), inputs,
                     session_->parameters().players, confirmed && !record_.empty());
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
  Xxh3Sink hasher_;                     ///< a predicted frame's hash
  std::uint64_t shown_keys_from_ = 0;  ///< the keys_from_tick the last status said
};

template <class S>
net::DriverOptions<S> driver_options(const SessionFlags& o, const std::string& name) {
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
  d.log = print_line;
  return d;
}

/// What S's hooks give a session: its predictor, and the perturbation --debug-perturb-tick asks for.
template <class S>
void apply_session_hooks(net::Session<S>& session, const SessionFlags& o) {
  if constexpr (HasPredictInput<S>) {
    session.set_predictor([](std::uint32_t player, std::uint64_t tick, const typename S::Input& last_confirmed) {
      return Hooks<S>::predict_input(player, tick, last_confirmed);
    });
  }
  if constexpr (HasPerturb<S>) {
    if (o.perturb_tick != 0) session.debug_perturb(o.perturb_tick, [](S& sim) { Hooks<S>::perturb(sim); });
  }
}

/// The page of the session, when --view asked for one (and S maps keys to an input).
template <class S>
std::unique_ptr<NetView<S>> view_if_asked(const SessionFlags& o, const net::Session<S>& session,
                                          net::DriverOptions<S>& driver, bool keys_play) {
  if constexpr (HasKeys<S>) {
    std::unique_ptr<NetView<S>> view = NetView<S>::start_if_asked(o, driver);
    if (view) view->attach(session, driver, keys_play);
    return view;
  } else {
    return nullptr;
  }
}

/// Drives the session to its end and reports it (to the page too); returns the exit code.
template <class S>
int drive_to_end(net::Session<S>& session, net::UdpSocket& socket, boost::asio::io_context& io,
                 const net::RealClock& clock, const net::DriverOptions<S>& driver, NetView<S>* view,
                 const SessionFlags& o) {
  const net::DriveResult result = net::drive(session, socket, io, clock, driver);
  if (view != nullptr) view->finish(result);
  return report(result, o);
}

template <class S>
void host_command(const HostOptions<S>& options, int* exit_code) {
  const HostFlags& o = options.flags;
  const typename S::Config config = config_from<S>(options.config, o.players);
  const net::HostConfig host = host_config(o);
  net::DriverOptions<S> driver = driver_options<S>(o.session, "host");
  boost::asio::io_context io;
  Result<std::unique_ptr<net::UdpSocket>> socket = net::UdpSocket::bind(io, o.port, driver.netsim);
  if (!socket) throw CommandError{socket.error().message, k_exit_network};
  const net::RealClock clock;
  Result<net::Session<S>> session = net::Session<S>::host(config, o.seed, host, clock.now());
  if (!session) throw CommandError{session.error().message};
  apply_session_hooks(session.value(), o.session);
  const std::unique_ptr<NetView<S>> view = view_if_asked(o.session, session.value(), driver, !o.session.bot && !o.relay);
  const std::uint16_t port = socket.value()->local_endpoint().port();
  const std::vector<std::string> invites = invite_lines(host.credentials, session->host_protocol()->host_key());
  for (const std::string& line : invites) print_line(line);
  std::optional<LocalInvites> left;
  if (!invites.empty()) {
    Result<LocalInvites> written = LocalInvites::leave(port, invites);
    if (written) {
      left.emplace(std::move(written).value());
      driver.log("host: the invites are also in " + left->path() + ", for joiners of this user on this machine");
    } else {
      driver.log("host: the invites are not left for joiners on this machine: " + written.error().message);
    }
  }
  if (host.credentials.token_key && o.host_id == 0) {
    driver.log("host: note: host id 0: a token minted for any other host of id 0 that shares this key gets in here");
  }
  driver.log(describe_host(session->parameters(), port, o, host, driver.netsim));
  if (!o.broadcast.empty()) {
    driver.log("host: broadcasting into " + o.broadcast +
               "; serve that directory over HTTP and watch with lockstep spectate http://SERVER/PATH/");
  }
  *exit_code = drive_to_end(session.value(), *socket.value(), io, clock, driver, view.get(), o.session);
}

template <class S>
void join_command(const JoinFlags& o, net::Role role, int* exit_code) {
  if (role == net::Role::spectator && is_broadcast_url(o.host)) {
    spectate_broadcast<S>(o, exit_code);
    return;
  }
  for (const CLI::Option* option : {o.from_start_option, o.behind_option}) {
    if (option != nullptr && option->count() > 0) {
      throw CommandError{option->get_name() + " follows a broadcast (an http:// address), not a session's host"};
    }
  }
  std::string local_invite;
  const net::JoinConfig join = join_config(o, role, &local_invite);
  net::DriverOptions<S> driver = driver_options<S>(o.session, role == net::Role::player ? "peer" : "spectator");
  driver.key_file = o.key_file;
  boost::asio::io_context io;
  Result<std::unique_ptr<net::UdpSocket>> socket = net::UdpSocket::open_for(io, join.host, driver.netsim);
  if (!socket) throw CommandError{socket.error().message, k_exit_network};
  const net::RealClock clock;
  Result<net::Session<S>> session = net::Session<S>::join(join, clock.now());
  if (!session) throw CommandError{session.error().message};
  apply_session_hooks(session.value(), o.session);
  driver.log(describe_join(driver.name, o, role, join, local_invite));
  const std::unique_ptr<NetView<S>> view =
      view_if_asked(o.session, session.value(), driver, role == net::Role::player && !o.session.bot);
  *exit_code = drive_to_end(session.value(), *socket.value(), io, clock, driver, view.get(), o.session);
}

/// What S adds to the networked commands' options.
template <class S>
NetHooks net_hooks(typename ConfigOptions<S>::Type* config, CLI::App* cmd) {
  NetHooks hooks;
  if constexpr (HasConfigOptions<S>) {
    if (config != nullptr) hooks.add_config = [cmd, config] { Hooks<S>::add_options(*cmd, *config); };
  }
  hooks.view = HasKeys<S>;
  hooks.perturb = HasPerturb<S>;
  return hooks;
}

/// Registers `host` for S on `cmd`.
template <class S>
void add_host_command(CLI::App* cmd, int* exit_code) {
  auto options = std::make_shared<HostOptions<S>>();
  add_host_options(cmd, options->flags, net_hooks<S>(&options->config, cmd));
  cmd->callback([options, exit_code] { host_command<S>(*options, exit_code); });
}

/// Registers `join` (a player) or `spectate` for S on `cmd`.
template <class S>
void add_join_command(CLI::App* cmd, net::Role role, int* exit_code) {
  auto options = std::make_shared<JoinFlags>();
  add_join_options(cmd, *options, role, net_hooks<S>(nullptr, cmd));
  cmd->callback([options, role, exit_code] { join_command<S>(*options, role, exit_code); });
}

}  // namespace lockstep::cli::detail
