#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <utility>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/broadcast_spectate.hpp"
#include "lockstep/cli/detail/local_invites.hpp"
#include "lockstep/cli/detail/net_flags.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/engine/tick_limit.hpp"
#include "lockstep/net/credentials/credential_files.hpp"
#include "lockstep/net/credentials/invite_code.hpp"
#include "lockstep/net/credentials/reconnect_key.hpp"
#include "lockstep/net/credentials/secret_file.hpp"
#include "lockstep/net/host/delay_controller.hpp"
#include "lockstep/net/io/host_port.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

namespace lockstep::cli::detail {
namespace {

/// The options every participant has.
void add_session_options(CLI::App* cmd, SessionFlags& o, bool player, const NetHooks& hooks) {
  if (player) cmd->add_flag("--bot", o.bot, "Play with the seeded bot input generator (unattended)");
  cmd->add_option("--record", o.record, "Record the session as a replay file");
  cmd->add_option("--netsim", o.netsim,
                  "Simulate a bad network on what this process sends: "
                  "loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,outage_at=3000,outage=1500,seed=7");
  cmd->add_option("--evidence-dir", o.evidence_dir, "Where a host writes the bundle of a desync's evidence (default: here)");
  cmd->add_option("--timeout-ms", o.timeout_ms,
                  "Silence after which the other side is gone (default " + std::to_string(o.timeout_ms) + ")")
      ->check(whole_number(k_min_timeout_ms, k_max_timeout_ms));
  cmd->add_option("--stats-json", o.stats_json, "On exit, write the network statistics to FILE as one JSON object");
  if (hooks.view) {
    const std::string watch = "Watch the session on a web page (--view or --view=PORT; default port " +
                              std::to_string(k_default_view_port) + ", 0: any)";
    o.view_option = cmd->add_option("--view", o.view, player ? watch + " and, without --bot, play it with the keyboard there"
                                                             : watch)
                        ->expected(0, 1);
  }
  if (player && hooks.perturb) {
    cmd->add_option("--debug-perturb-tick", o.perturb_tick, "Test only: nudge one value of this state after tick T")
        ->check(whole_number());
  }
}

}  // namespace

void add_host_options(CLI::App* cmd, HostFlags& o, const NetHooks& hooks) {
  cmd->add_option("--port", o.port, "UDP port to listen on, IPv6 and IPv4 (default " + std::to_string(o.port) + ")")
      ->check(whole_number(1, k_max_port));
  if (hooks.add_config) {
    cmd->add_option("--players", o.players,
                    "Player slots, the host's included unless --relay (default " + std::to_string(o.players) + ")")
        ->check(whole_number(1, net::k_max_session_players));
  }
  cmd->add_option("--start-with", o.start_with,
                  "Start once M slots are filled (the host's included); players can fill the others while the "
                  "session runs (default: all)")
      ->check(whole_number(1, net::k_max_session_players));
  cmd->add_option("--on-desync", o.on_desync,
                  "On a desync: stop everyone, or resync the diverged players from the host's state and go on "
                  "(default " + o.on_desync + ")")
      ->check(CLI::IsMember({"stop", "resync"}));
  cmd->add_flag("--relay", o.relay, "Relay only: the host plays no slot");
  cmd->add_flag("--no-migration", o.no_migration,
                "Give the players no order of succession: the session ends when the host is lost (by default a "
                "player takes over)");
  cmd->add_option("--ticks", o.ticks, "The session ends after this tick (default " + std::to_string(o.ticks) + ")")
      ->check(whole_number(1, k_max_command_ticks));
  cmd->add_option("--input-delay", o.input_delay,
                  "Input delay: D ticks (0 to " + std::to_string(net::k_max_input_delay) + "), or auto, the smallest that keeps every player from stalling, "
                  "adapted to the measured round trips (default " + o.input_delay + ")")
      ->check(CLI::IsMember({"auto"}) | whole_number(0, net::k_max_input_delay));
  cmd->add_option("--rollback", o.rollback,
                  "Prediction and rollback: players step up to W ticks (0 to " + std::to_string(net::k_max_prediction_window) +
                      ") ahead of the confirmed ticks, predicting the others' inputs, and re-simulate when they differ; "
                      "the input delay becomes the local delay (auto: the round trip's less W). 0: lockstep (default)")
      ->check(whole_number(0, net::k_max_prediction_window));
  cmd->add_option("--input-tolerance", o.input_tolerance,
                  "Ticks (1 to " + std::to_string(net::k_max_input_tolerance) +
                      ") the host waits for a late player's input past the tick's due time (when the first player's "
                      "input for it came, plus the input delay and the prediction window); then it decides that input (the player's latest), so one slow player stalls no one. off: "
                      "everyone waits for the slowest player (default " + o.input_tolerance + ")")
      ->check(CLI::IsMember({"off"}) | whole_number(1, net::k_max_input_tolerance));
  cmd->add_option("--tick-rate", o.tick_rate_hz,
                  "Ticks per second; every participant paces by it (default " + std::to_string(o.tick_rate_hz) + ")")
      ->check(whole_number(1, k_max_tick_rate_hz));
  if (hooks.add_config) hooks.add_config();
  cmd->add_option("--seed", o.seed, "Session seed (the initial state and the bots; default " + std::to_string(o.seed) + ")")
      ->check(whole_number());
  cmd->add_option("--notify-ms", o.notify_ms,
                  "Silence after which a player is reported interrupted (default " + std::to_string(o.notify_ms) + ")")
      ->check(whole_number(k_min_notify_ms, k_max_notify_ms));
  cmd->add_option("--wait-timeout", o.wait_timeout_s,
                  "Give up (exit 3) when the slots are not filled within SECONDS (default: wait forever)")
      ->check(whole_number(1, k_max_wait_timeout_s));
  CLI::Option* open = cmd->add_flag(
      "--open", o.open,
      "Admit anyone who completes the handshake (a LAN, a test): still encrypted, but nothing authenticates either "
      "side. Without it or --token-key the host prints invite codes and admits only their holders");
  CLI::Option* host_id =
      cmd->add_option("--host-id", o.host_id,
                      "The host id the tokens must name; required with --token-key (give each host of one key its own)")
          ->check(whole_number());
  cmd->add_option("--token-key", o.token_key_file,
                  "Admit only holders of unexpired connect tokens minted with this key for this --host-id (lockstep "
                  "keygen, lockstep token)")
      ->excludes(open)
      ->needs(host_id);
  cmd->add_option("--broadcast", o.broadcast,
                  "Broadcast the session as it is confirmed into DIR, as segment files and a manifest that any web "
                  "server serves to any number of viewers (lockstep spectate http://…/)");
  add_session_options(cmd, o.session, true, hooks);
}

void add_join_options(CLI::App* cmd, JoinFlags& o, net::Role role, const NetHooks& hooks) {
  cmd->add_option("host", o.host,
                  role == net::Role::player
                      ? "HOST:PORT of the session's host ([ADDRESS]:PORT for IPv6)"
                      : "HOST:PORT of the session's host ([ADDRESS]:PORT for IPv6), or the http://HOST[:PORT]/PATH/ of "
                        "its broadcast (host --broadcast, served by any web server)")
      ->required();
  if (role == net::Role::spectator) {
    o.from_start_option =
        cmd->add_flag("--from-start", o.from_start, "A broadcast: play it from tick 0, not from its latest keyframe");
    o.behind_option =
        cmd->add_option("--behind", o.behind_s,
                        "A broadcast: play SECONDS behind live (0 to 3600; default " +
                            std::to_string(static_cast<int>(k_default_behind_s)) + "); it catches up when twice that behind")
            ->check(CLI::Range(0.0, k_max_behind_s));
  }
  if (role == net::Role::player) {
    cmd->add_option("--key", o.key_file,
                    "Reconnect key: written after the welcome; if FILE exists, reclaim the slot it names (after a "
                    "crash or a dropped network) and go on from the host's state");
  }
  CLI::Option* invite = cmd->add_option(
      "--invite", o.invite,
      std::string("The invite code the host printed (its ") + (role == net::Role::player ? "invite" : "spectate-invite") +
          " line); without one, only a host started with --open admits this joiner, but on a loopback address the invite "
          "a host of this user left on this machine is taken (docs/COMMANDS.md: Local joiners)");
  CLI::Option* invite_file =
      cmd->add_option("--invite-file", o.invite_file,
                      "Read the invite code from FILE, an owner-only file (keeps it off the process list)")
          ->excludes(invite);
  cmd->add_option("--token", o.token_file, "Join with the connect token in FILE (lockstep token), for a host started with --token-key")
      ->excludes(invite)
      ->excludes(invite_file);
  add_session_options(cmd, o.session, role == net::Role::player, hooks);
}

namespace {

/// `code` parsed, and checked against the role it is used for.
net::Invite checked_invite(const std::string& code, net::Role role) {
  Result<net::Invite> invite = net::parse_invite_code(code);
  if (!invite) throw CommandError{invite.error().message};
  if (invite->role != role) {
    throw CommandError{role == net::Role::player ? "this is a spectator's invite code: use it with lockstep spectate"
                                                 : "this is a player's invite code: use it with lockstep join"};
  }
  return invite.value();
}

/// The invite of `--invite` or `--invite-file`, checked against the role it is used for.
std::optional<net::Invite> invite_of(const JoinFlags& o, net::Role role) {
  std::string code = o.invite;
  // The copy of the code is wiped however this ends (a bad code throws).
  struct Wiped {
    std::string& text;
    ~Wiped() { net::wipe_secret(std::as_writable_bytes(std::span(text.data(), text.size()))); }
  } wiped{code};
  if (!o.invite_file.empty()) {
    // An invite file is as secret as the code: owner-only, never read through a link.
    Result<std::vector<std::byte>> bytes = net::read_secret_file(o.invite_file, 4096);
    if (!bytes) throw CommandError{bytes.error().message};
    code.assign(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    net::wipe_secret(bytes.value());
  }
  if (code.empty()) return std::nullopt;
  return checked_invite(code, role);
}

}  // namespace

std::vector<std::string> invite_lines(const net::HostCredentials& credentials, const net::PublicKey& host_key) {
  std::vector<std::string> lines;
  if (credentials.player_invite) {
    lines.push_back("invite " + net::invite_code({net::Role::player, host_key, *credentials.player_invite}));
  }
  if (credentials.spectator_invite) {
    lines.push_back("spectate-invite " + net::invite_code({net::Role::spectator, host_key, *credentials.spectator_invite}));
  }
  return lines;
}

net::HostConfig host_config(const HostFlags& o) {
  net::HostConfig host;
  host.relay = o.relay;
  if (o.start_with > o.players) {
    throw CommandError{"--start-with " + std::to_string(o.start_with) + " is more than the " + std::to_string(o.players) + " players"};
  }
  host.start_with = o.start_with;
  host.resync = o.on_desync == "resync";
  host.migration = !o.no_migration;
  host.end_tick = o.ticks;
  // auto: the configuration's first delay (its ticks are neutral); the host then adapts it to the players.
  host.adaptive_delay = o.input_delay == "auto";
  if (!host.adaptive_delay) host.input_delay = static_cast<std::uint32_t>(std::stoul(o.input_delay));
  host.prediction_window = o.rollback;
  host.input_tolerance = o.input_tolerance == "off" ? 0 : static_cast<std::uint32_t>(std::stoul(o.input_tolerance));
  // With prediction an adaptive delay starts at the local delay's floor: lowering it takes 3 s.
  if (host.adaptive_delay && o.rollback != 0) host.input_delay = net::DelayController::k_prediction_floor;
  host.tick_rate_hz = o.tick_rate_hz;
  host.notify_after = std::chrono::milliseconds(o.notify_ms);
  host.timeout_after = std::chrono::milliseconds(o.session.timeout_ms);
  host.wait_timeout = std::chrono::seconds(o.wait_timeout_s);
  host.record = o.session.record;
  host.broadcast = o.broadcast;
  if (!o.broadcast.empty()) {
    // Said now, not when the session starts: the directory is made, and must take files.
    std::error_code made;
    std::filesystem::create_directories(o.broadcast, made);
    if (made || ::access(o.broadcast.c_str(), W_OK | X_OK) != 0) {
      throw CommandError{"cannot broadcast into '" + o.broadcast + "': " + (made ? made.message() : std::strerror(errno))};
    }
  }
  host.evidence_dir = o.session.evidence_dir;
  if (!net::crypto_ready()) throw CommandError{"libsodium cannot start here (no source of randomness)", k_exit_network};
  if (o.open) {
    host.credentials.open = true;
  } else if (!o.token_key_file.empty()) {
    Result<net::TokenKey> key = net::read_token_key(o.token_key_file);
    if (!key) throw CommandError{key.error().message};
    host.credentials.token_key = key.value();
    host.credentials.host_id = o.host_id;
    host.credentials.unix_seconds = [] {
      return static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    };
  } else {
    // Fresh secrets for this run's invite codes, printed before the host waits.
    net::CredentialSecret player{}, spectator{};
    net::random_bytes(player);
    net::random_bytes(spectator);
    host.credentials.player_invite = player;
    host.credentials.spectator_invite = spectator;
  }
  return host;
}

HttpUrl broadcast_url_of(const JoinFlags& o) {
  Result<HttpUrl> url = parse_http_url(o.host);
  if (!url) throw CommandError{url.error().message};
  // What only a session's host takes: said, not ignored.
  const std::pair<bool, const char*> udp_only[] = {
      {!o.invite.empty(), "--invite"},         {!o.invite_file.empty(), "--invite-file"},
      {!o.token_file.empty(), "--token"},      {!o.session.netsim.empty(), "--netsim"},
      {!o.session.record.empty(), "--record"}, {!o.session.stats_json.empty(), "--stats-json"},
  };
  for (const auto& [given, name] : udp_only) {
    if (given) throw CommandError{std::string(name) + " is for a session's host (HOST:PORT), not a broadcast"};
  }
  return url.value();
}

net::JoinConfig join_config(const JoinFlags& o, net::Role role, std::string* local_invite) {
  Result<net::Endpoint> at = net::parse_host_port(o.host);
  if (!at) throw CommandError{at.error().message};
  net::JoinConfig join;
  join.host = at.value();
  join.role = role;
  join.timeout_after = std::chrono::milliseconds(o.session.timeout_ms);
  join.record = o.session.record;
  join.evidence_dir = o.session.evidence_dir;
  if (!net::crypto_ready()) throw CommandError{"libsodium cannot start here (no source of randomness)", k_exit_network};
  join.nonce = net::random_u64() | 1;
  if (const std::optional<net::Invite> invite = invite_of(o, role)) {
    join.credential.kind = net::CredentialKind::invite;
    join.credential.secret = invite->secret;
    join.credential.host_key = invite->host_key;
  }
  if (!o.token_file.empty()) {
    Result<net::ConnectToken> token = net::read_connect_token(o.token_file);
    if (!token) throw CommandError{token.error().message};
    if (token->grant.role != role) {
      throw CommandError{role == net::Role::player ? "this is a spectator's token: use it with lockstep spectate"
                                                   : "this is a player's token: use it with lockstep join"};
    }
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    if (now >= token->grant.expires) {
      throw CommandError{"the token in '" + o.token_file + "' expired " + std::to_string(now - token->grant.expires) +
                         " s ago by this machine's clock"};
    }
    join.credential.kind = net::CredentialKind::token;
    join.credential.secret = token->secret;
    join.credential.token = token->blob;
  }
  if (join.credential.kind == net::CredentialKind::open && join.host.address().is_loopback()) {
    // A file whose code does not parse is passed over, as local_invites.hpp says.
    const std::optional<LocalInvite> left = find_local_invite(join.host.port(), role);
    const Result<net::Invite> invite = left ? net::parse_invite_code(left->code) : Result<net::Invite>(fail("none"));
    if (invite && invite->role == role) {
      join.credential.kind = net::CredentialKind::invite;
      join.credential.secret = invite->secret;
      join.credential.host_key = invite->host_key;
      *local_invite = left->file;
    }
  }
  // A link at FILE counts as there (and is refused as a key), dangling or not: never followed.
  std::error_code missing;
  if (!o.key_file.empty() && std::filesystem::exists(std::filesystem::symlink_status(o.key_file, missing))) {
    Result<net::ReconnectKey> key = net::read_reconnect_key(o.key_file);
    if (!key) throw CommandError{key.error().message};
    join.reclaim = key->reclaim;
    // Only the session's host (or a successor, which holds the same key pair) may take the key:
    // a version-2 file pins the host's key, as an invite does.
    if (key->host_key && !join.credential.host_key) join.credential.host_key = key->host_key;
    // Where the key was last written first (the session may have moved to a successor since),
    // then HOST:PORT.
    if (key->host && *key->host != join.host && key->host->protocol() == join.host.protocol()) {
      join.other_hosts.push_back(join.host);
      join.host = *key->host;
    }
  }
  return join;
}

net::NetSimConfig netsim_of(const SessionFlags& o) {
  if (o.netsim.empty()) return {};
  Result<net::NetSimConfig> netsim = net::parse_netsim(o.netsim);
  if (!netsim) throw CommandError{netsim.error().message};
  return netsim.value();
}

void print_line(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string describe_host(const net::SessionParameters& p, std::uint16_t port, const HostFlags& o,
                          const net::HostConfig& host, const net::NetSimConfig& netsim) {
  return "host: session " + hash_hex(p.session) + " on UDP port " + std::to_string(port) + ", " +
         std::to_string(p.players) + " players" + (o.relay ? " (relay: the host plays no slot)" : "") + ", " +
         std::to_string(p.end_tick) + " ticks at " + std::to_string(p.tick_rate_hz) + " Hz, input delay " +
         (host.adaptive_delay ? "auto (adapts to the round trips; " + std::to_string(p.input_delay) + " to start)"
                              : std::to_string(p.input_delay)) +
         (p.prediction_window != 0 ? ", rollback " + std::to_string(p.prediction_window) : std::string()) +
         ", input tolerance " + (host.input_tolerance == 0 ? std::string("off") : std::to_string(host.input_tolerance) + " ticks") +
         (o.start_with != 0 && o.start_with < p.players ? ", starts with " + std::to_string(o.start_with) : std::string()) +
         (host.resync ? ", resyncs on a desync" : "") + ", netsim " + net::describe(netsim);
}

std::string describe_join(const std::string& name, const JoinFlags& o, net::Role role, const net::JoinConfig& join,
                          const std::string& local_invite) {
  // A reclaim asks first where its key was written (the session may have moved), then HOST:PORT.
  const std::string others = join.other_hosts.empty() ? std::string() : " (where its key was written; then at " + o.host + ")";
  return name + ": asking the host at " + (join.reclaim ? net::endpoint_text(join.host) : o.host) + " to join" +
         (role == net::Role::player ? (join.reclaim ? " as player " + std::to_string(join.reclaim->slot) + " again, with its key"
                                                    : std::string(" as a player"))
                                    : " as a spectator") +
         others + (local_invite.empty() ? std::string() : ", with the invite its host left in " + local_invite);
}

int report(const net::DriveResult& driven, const SessionFlags& o) {
  const net::SessionResult& r = driven.session;
  std::fflush(stdout);
  int code = k_exit_network;
  if (driven.signal != 0) {
    std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(r.tick), hash_hex(r.hash).c_str());
    code = 128 + driven.signal;
  } else {
    switch (r.outcome) {
      case net::Outcome::finished:
        std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(r.tick), hash_hex(r.hash).c_str());
        code = k_exit_ok;
        break;
      case net::Outcome::desync:
        std::printf("desync at tick %llu\nevidence: %s\n", static_cast<unsigned long long>(r.desync_tick), r.evidence.c_str());
        code = k_exit_failed;
        break;
      case net::Outcome::refused:
        std::fprintf(stderr, "error: %s\n", r.message.c_str());
        code = k_exit_usage;
        break;
      case net::Outcome::network_failed:
        std::fprintf(stderr, "error: %s\n", r.message.c_str());
        code = k_exit_network;
        break;
    }
  }
  std::fflush(stdout);
  if (!o.stats_json.empty()) {
    std::ofstream json(o.stats_json);
    json << net::stats_json(driven.stats);
    if (!json) {
      std::fprintf(stderr, "error: cannot write the statistics to '%s'\n", o.stats_json.c_str());
      if (code == k_exit_ok) code = k_exit_usage;
    }
  }
  return code;
}

std::unique_ptr<ViewServer> start_view_if_asked(const SessionFlags& o) {
  if (o.view_option == nullptr || o.view_option->count() == 0) return nullptr;
  std::uint16_t port = k_default_view_port;
  if (!o.view.empty()) {
    unsigned parsed = 0;
    const auto [end, error] = std::from_chars(o.view.data(), o.view.data() + o.view.size(), parsed);
    if (error != std::errc{} || end != o.view.data() + o.view.size() || parsed > k_max_port) {
      throw CommandError{"--view '" + o.view + "' is not a port (0 to " + std::to_string(k_max_port) + "): write --view=PORT"};
    }
    port = static_cast<std::uint16_t>(parsed);
  }
  ViewServerConfig config;
  config.port = port;
  Result<std::unique_ptr<ViewServer>> started = ViewServer::start(config);
  if (!started) throw CommandError{started.error().message, k_exit_network};
  return std::move(started).value();
}

std::string view_announcement(const std::string& name, bool bot, const std::string& url) {
  return name + (name == "spectator" || bot ? ": watch at " : ": watch and play at ") + url + " in a browser";
}

LiveEnd live_end(const net::DriveResult& driven, bool is_host) {
  const net::SessionResult& r = driven.session;
  if (driven.signal != 0) return {"ended", "the session was stopped"};
  if (r.outcome == net::Outcome::desync) {
    return {"desync", "desync at tick " + std::to_string(r.desync_tick) + "; evidence: " + r.evidence};
  }
  if (r.outcome != net::Outcome::finished) {
    const bool host_gone = !is_host && r.message.find("the host") != std::string::npos;
    return {r.outcome == net::Outcome::refused ? "refused" : host_gone ? "host lost" : "failed", r.message};
  }
  return {"ended", "the session has ended"};
}

}  // namespace lockstep::cli::detail
