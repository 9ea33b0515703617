#pragma once
// The options of `host`, `join` and `spectate` that do not depend on the simulation, their
// registration, and the parts of those commands that need no simulation type: compiled once in
// the cli library (src/net_commands.cpp). Every default that net owns is read from its
// configuration (net::HostConfig{}, net::JoinConfig{}), never written again here.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "lockstep/cli/detail/broadcast_pace.hpp"
#include "lockstep/cli/view/view_server.hpp"
#include "lockstep/net/io/fault_model.hpp"
#include "lockstep/net/wire/wire.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/session/session_driver.hpp"

namespace lockstep::cli::detail {

/// The UDP port `host` listens on unless told otherwise.
inline constexpr std::uint16_t k_default_host_port = 7777;

/// What host, join and spectate share.
struct SessionFlags {
  /// The defaults that differ by command come from that command's net configuration.
  SessionFlags(std::chrono::milliseconds timeout_after, std::string evidence_dir_default)
      : evidence_dir(std::move(evidence_dir_default)), timeout_ms(static_cast<std::uint32_t>(timeout_after.count())) {}

  bool bot = false;
  std::string record;
  std::string netsim;
  std::string stats_json;
  std::uint64_t perturb_tick = 0;
  std::string evidence_dir;
  std::uint32_t timeout_ms;
  std::string view;  ///< --view[=PORT]
  CLI::Option* view_option = nullptr;
};

/// `host`'s own options; the simulation's configuration options come beside them (HostOptions<S>).
struct HostFlags {
  SessionFlags session{net::HostConfig{}.timeout_after, net::HostConfig{}.evidence_dir};
  std::uint16_t port = k_default_host_port;
  std::uint32_t players = 2;
  std::uint32_t start_with = 0;
  std::string on_desync = "stop";
  bool relay = false;
  bool no_migration = false;
  std::uint64_t ticks = net::HostConfig{}.end_tick;
  std::string input_delay = "auto";
  std::uint32_t rollback = 0;  ///< the prediction window W (0: lockstep)
  std::string input_tolerance = std::to_string(net::k_default_input_tolerance);  ///< ticks, or "off"
  std::uint32_t tick_rate_hz = net::HostConfig{}.tick_rate_hz;
  std::uint32_t notify_ms = static_cast<std::uint32_t>(net::HostConfig{}.notify_after.count());
  std::uint32_t wait_timeout_s = 0;
  std::uint64_t seed = 1;
  bool open = false;  ///< admit anyone (still sealed); else by the invite codes it prints
  std::string token_key_file;  ///< … or the holders of tokens minted with this key
  std::uint64_t host_id = 0;   ///< the host id those tokens name
  std::string broadcast;       ///< --broadcast DIR: the session as segment files any web server serves
};

/// `join`'s and `spectate`'s options.
struct JoinFlags {
  SessionFlags session{net::JoinConfig{}.timeout_after, net::JoinConfig{}.evidence_dir};
  std::string host;
  std::string key_file;  ///< join only
  std::string invite;       ///< an invite code the host printed
  std::string invite_file;  ///< … or a file holding one (off the process list)
  std::string token_file;   ///< … or a connect token file
  bool from_start = false;            ///< spectate URL: from tick 0, not the latest keyframe
  double behind_s = k_default_behind_s;  ///< spectate URL: seconds behind live
  CLI::Option* from_start_option = nullptr;
  CLI::Option* behind_option = nullptr;
};

/// What the simulation adds to a networked command's options.
struct NetHooks {
  std::function<void()> add_config;  ///< its configuration options (host; with --players), or none
  bool view = false;                 ///< it maps keys to an input: --view
  bool perturb = false;              ///< it can be nudged: --debug-perturb-tick
};

/// Registers `host`'s options on `cmd`, each with its default from `flags`.
void add_host_options(CLI::App* cmd, HostFlags& flags, const NetHooks& hooks);
/// Registers the options of `join` (a player) or `spectate` on `cmd`.
void add_join_options(CLI::App* cmd, JoinFlags& flags, net::Role role, const NetHooks& hooks);

/// The host's configuration from its options, with fresh invite secrets when it admits by invite.
net::HostConfig host_config(const HostFlags& flags);
/// A joiner's configuration from its options: the host's address resolved, the reconnect key
/// read when its file exists. Given no credential and a loopback address, it takes the invite a
/// host of this user left on this machine (local_invites.hpp) and names its file in
/// `local_invite`.
net::JoinConfig join_config(const JoinFlags& flags, net::Role role, std::string* local_invite);

/// `--netsim` parsed (nothing: no faults).
net::NetSimConfig netsim_of(const SessionFlags& flags);
/// The lines `invite <CODE>` and `spectate-invite <CODE>` a host prints before it waits, for its
/// key (nothing for a host that admits by other means).
std::vector<std::string> invite_lines(const net::HostCredentials& credentials, const net::PublicKey& host_key);
/// A driver's line on stdout, flushed at once (the tests and scripts read them as they come).
void print_line(const std::string& line);

/// The host's first line: its session, port, players, ticks, pace, delay and faults.
std::string describe_host(const net::SessionParameters& p, std::uint16_t port, const HostFlags& flags,
                          const net::HostConfig& host, const net::NetSimConfig& netsim);
/// A joiner's first line: whom it asks, and as what.
std::string describe_join(const std::string& name, const JoinFlags& flags, net::Role role, const net::JoinConfig& join,
                          const std::string& local_invite);

/// The session's last lines (`tick N hash H`, the desync, or the error) and the statistics file;
/// returns the exit code.
int report(const net::DriveResult& driven, const SessionFlags& flags);

/// `--view`: the page's server when it was asked for, else null.
std::unique_ptr<ViewServer> start_view_if_asked(const SessionFlags& flags);
/// The line that says where the page is (`name`: "host", "peer" or "spectator").
std::string view_announcement(const std::string& name, bool bot, const std::string& url);

/// How the pages are told a session ended.
struct LiveEnd {
  std::string phase;  ///< "ended", "desync", "refused", "host lost" or "failed"
  std::string message;
};
LiveEnd live_end(const net::DriveResult& driven, bool is_host);

}  // namespace lockstep::cli::detail
